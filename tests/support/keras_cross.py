"""Run in a subprocess by test_keras_legacy.py: this process' Keras against another's.

``python tests/support/keras_cross.py IN_DIR OUT_DIR`` prints one JSON line: the flavour, the
model-relative names of every reference model, which checkpoints from IN_DIR (written by
the other Keras) loaded into this Keras with ``assignment_map="auto"`` and held the right
values, and the checkpoints it wrote to OUT_DIR for the other side.
"""

import json
import os
import sys

if not __package__:  # run as a script: `support` is a package of tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from support.keras_helpers import fill_distinct, flavour, reference_models, tf, wrong_values
from tf1compat_init.keras import load_checkpoint, weight_names


def main(in_dir: str, out_dir: str) -> dict:
    result = {"flavour": flavour(), "names": {}, "loaded": {}, "written": {}}
    for key, model in reference_models().items():
        result["names"][key] = list(weight_names(model))
        source = os.path.join(in_dir, key)
        if os.path.isdir(source):
            try:
                report = load_checkpoint(model, source, "auto")
                result["loaded"][key] = {"wrong": wrong_values(model), "map": report.applied_map}
            except Exception as e:  # reported to the parent, which asserts on it
                result["loaded"][key] = {"error": f"{type(e).__name__}: {e}"}
        fill_distinct(model)
        prefix = os.path.join(out_dir, key, "ckpt")
        result["written"][key] = tf.train.Checkpoint(model=model).save(prefix)
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
