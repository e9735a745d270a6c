# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Restore policy: what a restore tolerates and how it stages its reads, checked once.

:class:`RestorePolicy` holds every policy keyword the front ends accept. Building one checks
every value, in the words below, so a front end checks its keywords by building the policy
(before it opens a checkpoint or touches a variable) and then hands the object down: the
planner reads ``on_missing``, ``on_mismatch``, ``on_conflict``, ``optional`` and
``exclude``; the plan carries the policy to :func:`~tf1compat_init.apply.apply_plan`, which
reads ``staging``; the ``tf.compat.v1`` graph front end reads ``verify``.

Every front end takes the policy either as keywords (``on_missing="warn"``) or as
``policy=RestorePolicy(...)``; keywords given as well replace those fields of ``policy``
(:func:`tf1compat_init.preamble.prepare` resolves both, for every front end).

Pure Python; imports nothing else from the package, so the grammar
(:mod:`tf1compat_init.mapping`) and the planner (:mod:`tf1compat_init.plan`) can both use it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_OPTIONAL",
    "EAGER_KEYWORDS",
    "POLICY_CHOICES",
    "POLICY_KEYWORDS",
    "STAGING_CHOICES",
    "UNSET",
    "RestorePolicy",
    "check_policy_value",
    "check_policy_values",
    "resolve_policy",
]

#: Optimizer state in name-based checkpoints (``re.search``), the one list behind
#: :data:`DEFAULT_OPTIONAL`, migrate's ``drop_optimizer``
#: (:data:`tf1compat_init.migrate.OPTIMIZER_PATTERNS`) and the recipes' ``drop``
#: (:data:`tf1compat_init.recipes.TRAINING_STATE`), so a fine-tune's slots are optional,
#: dropped and left out alike. Each entry is written against the names the real optimizer
#: gives (``tests/engine/planning/test_optimizer_state.py`` builds them):
OPTIMIZER_STATE: tuple[str, ...] = (
    # tf.compat.v1.train: a slot is ``<var>/<optimizer name>``, a second one ``..._1``;
    # contrib's AdamW, LazyAdam and AdaMax, LAMB and Adafactor as tf.train.Optimizers too.
    r"/(Momentum|Adam|RMSProp|Adagrad|AdagradDA|Adadelta|Ftrl|ProximalAdagrad|AdamW|LazyAdam|"
    r"AdaMax|AdamWeightDecay|LAMB|Lamb|Adafactor)(_\d+)?$",
    # Adam's (and AdamW's, LazyAdam's) step powers, one pair per optimizer instance.
    r"(^|/)beta[12]_power(_\d+)?$",
    # bert-tensorflow's AdamWeightDecayOptimizer (BERT, ALBERT, ELECTRA fine-tunes),
    # ALBERT's and others' LAMB: ``<var>/adam_m``, ``<var>/lamb_v``.
    r"/(adam|lamb)_[mv]$",
    # Adafactor: tensor2tensor-style ``<var>/adafactor_vr`` and Mesh TF's ``<var>_slot_vc``.
    r"/adafactor_(vr|vc|v|m)$",
    r"_slot_(vr|vc|v|m)$",
    # Keras 2 (tf_keras) legacy optimizers saved name-based: ``<Opt>/<var>/m``,
    # ``<Opt>/iter``, hyperparameters; under ``training/`` when compiled in a TF1 graph.
    r"^(training(_\d+)?/)?(Adam|SGD|RMSprop|Adagrad|Adadelta|Adamax|Nadam|Ftrl)(_\d+)?/",
    # The step counter every tf.compat.v1 optimizer advances (``minimize(global_step=)``).
    r"(^|/)global_step$",
)

#: Targets that may be absent from a checkpoint without error (``re.search``):
#: training state that a fresh model builds but a pretrained checkpoint often lacks.
#: Besides :data:`OPTIMIZER_STATE`, ``tf.train.Checkpoint``'s ``save_counter`` and
#: moving-average shadows (which migrate's ``drop_optimizer`` keeps: they are not the
#: optimizer's, and evaluation may still need them).
DEFAULT_OPTIONAL: tuple[str, ...] = (
    *OPTIMIZER_STATE,
    r"(^|/)save_counter$",
    r"/ExponentialMovingAverage(_\d+)?$",
)

#: The values each policy keyword accepts. Every front end checks its policy keywords
#: with :func:`check_policy_value`, so a bad value reads the same wherever it is passed.
POLICY_CHOICES: dict[str, tuple[str, ...]] = {
    "on_missing": ("error", "warn", "ignore"),
    "on_mismatch": ("error", "warn", "ignore"),
    "on_conflict": ("error", "last"),
}

#: How :func:`~tf1compat_init.apply.apply_plan` stages values: ``"stream"`` (bounded
#: memory) or ``"all"`` (every value staged and verified before the first assign).
STAGING_CHOICES: tuple[str, ...] = ("stream", "all")


class _Unset:
    """The default of a policy keyword that was not passed (the policy's value applies)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


#: The default of a keyword argument that falls back to the policy's field.
UNSET: Any = _Unset()


def check_policy_value(name: str, value: Any) -> None:
    """Raises ``ValueError`` unless ``value`` is one that policy keyword ``name`` accepts.

    The message follows Keras's wording: the argument, the value received, the values
    allowed.

    Args:
        name: a key of :data:`POLICY_CHOICES` (``on_missing``, ``on_mismatch``,
            ``on_conflict``).
        value: what the caller passed.

    Raises:
        ValueError: ``value`` is not one of ``POLICY_CHOICES[name]``.

    Example:
        >>> check_policy_value("on_conflict", "first")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Invalid value for argument on_conflict. Received: on_conflict='first'. ...
    """
    _check_choice(name, value, POLICY_CHOICES[name])


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    # The str check first: ``in`` on an array or other odd object could raise or mislead.
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"Invalid value for argument {name}. Received: {name}={value!r}. "
            f"Expected one of {', '.join(map(repr, choices))}."
        )


def check_policy_values(policy: Mapping[str, Any]) -> None:
    """Checks the policy keywords present in ``policy`` (other keys are left alone).

    Raises:
        ValueError: as :func:`check_policy_value`, for the first bad value in
            ``on_missing``, ``on_mismatch``, ``on_conflict`` order.

    Example:
        >>> check_policy_values({"on_missing": "warn", "exclude": ["bias"]})
    """
    for name in POLICY_CHOICES:
        if name in policy:
            check_policy_value(name, policy[name])


def _patterns(value: Any) -> tuple[Any, ...]:
    # One pattern or several; ``None`` is none. A lone string is one pattern, not its letters.
    if value is None:
        return ()
    if isinstance(value, str | bytes | re.Pattern):
        return (value,)
    return tuple(value)


@dataclass(frozen=True)
class RestorePolicy:
    """Every policy keyword of every front end, checked when the policy is built.

    Attributes:
        on_missing: ``"error"``, ``"warn"`` or ``"ignore"`` for targets a rule covers but
            the checkpoint lacks (those matching ``optional`` are never an error).
        on_mismatch: the same, for shape or dtype mismatches; with ``"warn"`` or
            ``"ignore"`` a mismatched target keeps its value.
        on_conflict: ``"error"`` when two rules write one target from different keys,
            ``"last"`` for TF's behaviour (the last rule in key order wins).
        optional: regexes (``re.search``) of targets that may be missing; ``()`` is TF's
            strictness. Default :data:`DEFAULT_OPTIONAL` (optimizer slots, step counters).
        exclude: regexes; a pair whose checkpoint key or target matches is dropped.
        staging: ``"stream"`` (bounded memory, the default) or ``"all"`` (every value
            staged and verified in its final buffer before the first assign), for the
            front ends that assign eagerly (see :mod:`tf1compat_init.apply`).
        verify: ``tf.compat.v1`` graph mode only: read every planned tensor now and check
            its CRC32C, before the graph changes. Every eager path always verifies.

    Raises:
        ValueError: a value it does not accept, in the words of
            :func:`check_policy_value` (``staging`` included).
        TypeError: ``verify`` is not a bool.

    Example:
        >>> policy = RestorePolicy(on_missing="warn", staging="all")
        >>> policy.on_missing, policy.on_conflict
        ('warn', 'error')
        >>> RestorePolicy(on_conflict="first")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Invalid value for argument on_conflict. Received: on_conflict='first'. ...
    """

    on_missing: str = "error"
    on_mismatch: str = "error"
    on_conflict: str = "error"
    optional: tuple[Any, ...] = DEFAULT_OPTIONAL
    exclude: tuple[Any, ...] = ()
    staging: str = "stream"
    verify: bool = False

    def __post_init__(self) -> None:
        check_policy_value("on_missing", self.on_missing)
        check_policy_value("on_mismatch", self.on_mismatch)
        check_policy_value("on_conflict", self.on_conflict)
        _check_choice("staging", self.staging, STAGING_CHOICES)
        if not isinstance(self.verify, bool):
            raise TypeError(
                f"Invalid value for argument verify. Received: verify={self.verify!r}. "
                f"Expected True or False."
            )
        object.__setattr__(self, "optional", _patterns(self.optional))
        object.__setattr__(self, "exclude", _patterns(self.exclude))

    def replace(self, **changes: Any) -> RestorePolicy:
        """A copy with ``changes`` (checked); keywords equal to :data:`UNSET` are skipped."""
        changes = {k: v for k, v in changes.items() if v is not UNSET}
        return dataclasses.replace(self, **changes) if changes else self


#: The keyword names of :class:`RestorePolicy`, in its field order.
POLICY_KEYWORDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RestorePolicy))
#: The keywords of the front ends that assign eagerly: ``verify`` is graph mode's (an eager
#: restore always verifies before the first assign), so they do not take it as a keyword.
EAGER_KEYWORDS: tuple[str, ...] = tuple(k for k in POLICY_KEYWORDS if k != "verify")


def resolve_policy(
    api: str,
    policy: RestorePolicy | None = None,
    keywords: Mapping[str, Any] | None = None,
    *,
    allowed: Collection[str] = POLICY_KEYWORDS,
) -> RestorePolicy:
    """The policy a front end runs with: ``policy`` (or the defaults), ``keywords`` over it.

    Args:
        api: the front end's name, for the error messages.
        policy: a :class:`RestorePolicy`, or ``None`` for the defaults.
        keywords: policy keywords passed one by one; they replace ``policy``'s fields
            (:data:`UNSET` values are skipped).
        allowed: the keyword names this front end accepts.

    Raises:
        TypeError: an unknown keyword, or ``policy`` is not a :class:`RestorePolicy`.
        ValueError: a value the policy does not accept (see :class:`RestorePolicy`).

    Example:
        >>> resolve_policy("load", RestorePolicy(on_missing="warn"), {"staging": "all"})
        ...     # doctest: +ELLIPSIS
        RestorePolicy(on_missing='warn', ..., staging='all', verify=False)
    """
    keywords = dict(keywords or {})
    unknown = [k for k in keywords if k not in allowed]
    if unknown:
        raise TypeError(
            f"{api}() got an unexpected keyword argument {unknown[0]!r}; the policy "
            f"keywords are {', '.join(allowed)} (or policy=RestorePolicy(...))"
        )
    if policy is None:
        policy = _DEFAULT
    elif not isinstance(policy, RestorePolicy):
        raise TypeError(
            f"{api}(): policy must be a tf1compat_init.RestorePolicy, got "
            f"{type(policy).__name__} {policy!r}"
        )
    return policy.replace(**keywords)


_DEFAULT = RestorePolicy()
