"""tf1compat_init.engine.targets.keras_names: Keras flavours and ``assignment_map="auto"``.

Pure: the flavour is read off class hierarchies and the auto map off names, so neither needs
a Keras. Model-relative weight names on real models of every Keras are tested in
tests/frontends/keras/test_keras.py.
"""

from __future__ import annotations

import pytest

from tf1compat_init.engine.targets.keras_names import derive_auto_map, keras_flavour
from tf1compat_init.errors import AssignmentMapError

pytestmark = pytest.mark.pure


def _layer_from(module: str):
    base = type("Layer", (), {"__module__": module})
    return type("Dense", (base,), {"__module__": "user.models"})()


@pytest.mark.parametrize(
    "module, flavour",
    [
        ("keras.src.layers.layer", "keras3"),
        ("tf_keras.src.engine.base_layer", "tf_keras"),
        ("keras.src.engine.base_layer", "keras2"),
        ("keras.engine.base_layer", "keras2"),
    ],
)
def test_the_flavour_is_read_off_the_class_hierarchy(module, flavour):
    assert keras_flavour(_layer_from(module)) == flavour


def test_a_non_keras_object_is_a_type_error_naming_its_class():
    with pytest.raises(TypeError, match=r"got user\.models\.Dense"):
        keras_flavour(_layer_from("torch.nn.modules.module"))


def test_names_already_equal_need_no_map():
    auto = derive_auto_map({"a", "b"}, {"a"})
    assert auto.rules is None and auto.pairs == {"a": "a"} and auto.unpaired == []


def test_auto_numbering_pairs_in_numbering_order():
    ckpt = {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}
    targets = {"dense_4/kernel", "dense_4/bias", "dense_5/kernel", "dense_5/bias"}
    auto = derive_auto_map(ckpt, targets)
    assert auto.pairs == {
        "dense_4/kernel": "dense/kernel",
        "dense_4/bias": "dense/bias",
        "dense_5/kernel": "dense_1/kernel",
        "dense_5/bias": "dense_1/bias",
    }
    assert auto.rules == {"dense/": "dense_4/", "dense_1/": "dense_5/"}
    assert auto.unpaired == []


def test_a_model_prefix_in_the_checkpoint_is_one_compact_rule():
    auto = derive_auto_map(
        {"sequential/dense/kernel", "sequential/dense/bias"}, {"dense/kernel", "dense/bias"}
    )
    assert auto.rules == {"sequential/": "/"}
    assert auto.pairs == {
        "dense/kernel": "sequential/dense/kernel",
        "dense/bias": "sequential/dense/bias",
    }


def test_nothing_in_common_pairs_nothing():
    auto = derive_auto_map({"x/y"}, {"dense/kernel"})
    assert auto.rules == {} and auto.pairs == {} and auto.unpaired == ["dense/kernel"]


def test_two_prefixes_that_fit_equally_are_an_error_never_a_guess():
    with pytest.raises(AssignmentMapError, match=r"ambiguous.*\{'a/': '/'\}, \{'b/': '/'\}"):
        derive_auto_map({"a/dense/kernel", "b/dense/kernel"}, {"dense/kernel"})
