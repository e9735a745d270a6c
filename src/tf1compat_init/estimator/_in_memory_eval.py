# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
# Modified from `tensorflow_estimator/python/estimator/hooks/hooks.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; variables copied by name from the training session.
"""``InMemoryEvaluatorHook``: evaluation inside training, from the live variables.

As in tensorflow-estimator 2.15, the hook builds the evaluation graph once (in its own
``tf.Graph``, as ``Estimator.evaluate`` would), and evaluates when the training session
is created, every ``every_n_iter`` training steps of this ``train`` call, and at its end.
Each evaluation copies the values of the global variables that both graphs have (by
name) from the training session into a fresh evaluation session, instead of reading a
checkpoint, and writes its summaries to ``estimator.eval_dir(name)`` at the training
global step.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from . import _eval
from ._extenders import reject_tf_estimator

__all__ = ["InMemoryEvaluatorHook"]


class InMemoryEvaluatorHook(tf.compat.v1.train.SessionRunHook):
    """Evaluates the model being trained every N steps, without a checkpoint.

    Args:
        estimator: the :class:`~tf1compat_init.estimator.Estimator` being trained.
        input_fn: the evaluation ``input_fn`` (as for ``Estimator.evaluate``).
        steps: batches per evaluation (``None``: until the input ends).
        hooks: ``SessionRunHook``s for each evaluation.
        name: the evaluation's name; summaries go to ``estimator.eval_dir(name)``.
        every_n_iter: evaluate every this many training steps (and once at the start
            and once at the end of each ``train`` call).

    Raises:
        ValueError: ``every_n_iter`` is not positive, ``steps`` is not positive, or the
            estimator is configured for more than one machine.
        TypeError: a hook is not a ``SessionRunHook``.

    Not supported (as in tf.estimator): a ``Scaffold`` with a custom ``saver`` or
    ``init_fn`` (``ValueError`` in ``begin``) and saveable objects other than variables
    (``ValueError`` when the training session starts).

    Example:
        >>> hook = InMemoryEvaluatorHook(est, eval_input_fn, every_n_iter=50)  # doctest: +SKIP
        >>> est.train(train_input_fn, steps=200, hooks=[hook])  # doctest: +SKIP
    """

    def __init__(
        self,
        estimator: Any,
        input_fn: Any,
        steps: int | None = None,
        hooks: Any = None,
        name: str | None = None,
        every_n_iter: int = 100,
    ) -> None:
        from ._estimator import _check_hooks

        reject_tf_estimator(estimator, "InMemoryEvaluatorHook")
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        config = estimator.config
        if config.num_ps_replicas > 0 or config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) setting.")
        self._estimator = estimator
        self._input_fn = input_fn
        self._steps = steps
        self._name = name
        self._every_n_iter = every_n_iter
        self._eval_dir = os.path.join(estimator.model_dir, "eval" if not name else "eval_" + name)
        self._graph = None
        self._hooks = _check_hooks(hooks)
        self._hooks.extend(_eval.steps_hooks(steps))
        self._timer = tf.compat.v1.train.SecondOrStepTimer(every_steps=every_n_iter)

    def begin(self) -> None:
        """Builds the evaluation graph and the placeholders that feed its variables."""
        self._timer.reset()
        self._iter_count = 0
        self._graph = tf.Graph()
        with self._graph.as_default():
            built = _eval.build_eval_graph(self._estimator, self._input_fn, self._hooks, None)
            self._scaffold, self._update_op, self._eval_dict, self._all_hooks = built
            if self._scaffold.saver is not None:
                raise ValueError("InMemoryEvaluator does not support custom saver")
            if self._scaffold.init_fn is not None:
                raise ValueError("InMemoryEvaluator does not support custom init_fn")
            variables = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
            self._var_name_to_eval_var = {v.name: v for v in variables}
            self._var_name_to_placeholder = {
                v.name: tf.compat.v1.placeholder(v.dtype) for v in variables
            }

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Pairs the variables of both graphs by name, then evaluates the starting model."""
        if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS):
            raise ValueError(
                "InMemoryEvaluator does not support saveables other than global variables."
            )
        train_vars = {
            v.name: v for v in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
        }
        # Variables only one graph has (optimizer slots, eval-only state) are not copied.
        shared = set(self._var_name_to_placeholder) & set(train_vars)
        self._var_name_to_train_var = {n: train_vars[n] for n in shared}
        self._var_name_to_eval_var = {n: self._var_name_to_eval_var[n] for n in shared}
        with self._graph.as_default():
            self._var_feed_op = tf.group(
                [
                    tf.compat.v1.assign(
                        self._var_name_to_eval_var[n], self._var_name_to_placeholder[n]
                    )
                    for n in shared
                ]
            )
        self._evaluate(session)

    def _evaluate(self, train_session: Any) -> None:
        values = train_session.run(self._var_name_to_train_var)
        feed = {self._var_name_to_placeholder[n]: v for n, v in values.items()}

        def feed_variables(scaffold: Any, session: Any) -> None:
            del scaffold
            session.run(self._var_feed_op, feed_dict=feed)

        scaffold = tf.compat.v1.train.Scaffold(
            init_fn=feed_variables, copy_from_scaffold=self._scaffold
        )
        with self._graph.as_default():
            _eval.run_eval(
                self._estimator,
                None,
                scaffold,
                self._update_op,
                self._eval_dict,
                self._all_hooks,
                self._eval_dir,
            )
        self._timer.update_last_triggered_step(self._iter_count)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Evaluates every ``every_n_iter`` steps of this training call."""
        self._iter_count += 1
        if self._timer.should_trigger_for_step(self._iter_count):
            self._evaluate(run_context.session)

    def end(self, session: Any) -> None:
        """Evaluates the final model."""
        self._evaluate(session)
