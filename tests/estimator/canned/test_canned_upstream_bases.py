"""tensorflow-estimator 2.15's own canned-estimator tests, run against ours (TF 2.15 leg).

tensorflow-estimator ships the base classes of its DNN and linear estimator tests
(``canned/dnn_testing_utils.py``, ``canned/linear_testing_utils.py``): each takes the
estimator constructor to test, writes checkpoints with known values and checks the
trained variables, the losses (through mock optimizers), ``evaluate`` metrics,
``predict`` outputs, integration runs (numpy, pandas, tf.Example input) and warm starts
against numbers worked out by hand. TensorFlow runs them on ``tf.estimator``'s classes;
here each one runs on ours, imported from the installed package, nothing copied. Only the
``Base*`` classes that take a constructor are used (the others test TF's private
``_dnn_model_fn`` / ``_linear_logit_fn`` internals).

The same bases were run on TF 2.21 with tf_keras (their imports pointed at ours): all pass
there too; that run needs their source, so it is not part of the suite.
"""

import pytest

tf = pytest.importorskip("tensorflow")

import tf1compat_init.estimator as E  # noqa: E402

pytestmark = pytest.mark.tf215
#: Only TF 2.15 has tensorflow-estimator; elsewhere this module holds no tests.
HAS_REAL = tf.__version__.startswith("2.15.")
if HAS_REAL:
    from tensorflow_estimator.python.estimator.canned import dnn_testing_utils as D
    from tensorflow_estimator.python.estimator.canned import linear_testing_utils as L


def _bases_with(base, *constructors):
    """A ``tf.test.TestCase`` running ``base``'s tests with our ``constructors``."""

    class Case(base, tf.test.TestCase):
        test_session = None  # tf.test.TestCase's helper, not a test

        def __init__(self, methodName="runTest"):
            tf.test.TestCase.__init__(self, methodName)
            base.__init__(self, *constructors)

    Case.__name__ = Case.__qualname__ = base.__name__.replace("Base", "Ours")
    return Case


if HAS_REAL:
    OursDNNClassifierEvaluateTest = _bases_with(D.BaseDNNClassifierEvaluateTest, E.DNNClassifier)
    OursDNNClassifierPredictTest = _bases_with(D.BaseDNNClassifierPredictTest, E.DNNClassifier)
    OursDNNClassifierTrainTest = _bases_with(D.BaseDNNClassifierTrainTest, E.DNNClassifier)
    OursDNNRegressorEvaluateTest = _bases_with(D.BaseDNNRegressorEvaluateTest, E.DNNRegressor)
    OursDNNRegressorPredictTest = _bases_with(D.BaseDNNRegressorPredictTest, E.DNNRegressor)
    OursDNNRegressorTrainTest = _bases_with(D.BaseDNNRegressorTrainTest, E.DNNRegressor)
    OursDNNWarmStartingTest = _bases_with(
        D.BaseDNNWarmStartingTest, E.DNNClassifier, E.DNNRegressor
    )

    OursLinearRegressorEvaluationTest = _bases_with(
        L.BaseLinearRegressorEvaluationTest, E.LinearRegressor
    )
    OursLinearRegressorPredictTest = _bases_with(
        L.BaseLinearRegressorPredictTest, E.LinearRegressor
    )
    OursLinearRegressorIntegrationTest = _bases_with(
        L.BaseLinearRegressorIntegrationTest, E.LinearRegressor
    )
    OursLinearRegressorTrainingTest = _bases_with(
        L.BaseLinearRegressorTrainingTest, E.LinearRegressor
    )
    OursLinearClassifierTrainingTest = _bases_with(
        L.BaseLinearClassifierTrainingTest, E.LinearClassifier
    )
    OursLinearClassifierEvaluationTest = _bases_with(
        L.BaseLinearClassifierEvaluationTest, E.LinearClassifier
    )
    OursLinearClassifierPredictTest = _bases_with(
        L.BaseLinearClassifierPredictTest, E.LinearClassifier
    )
    OursLinearClassifierIntegrationTest = _bases_with(
        L.BaseLinearClassifierIntegrationTest, E.LinearClassifier
    )
    OursLinearWarmStartingTest = _bases_with(
        L.BaseLinearWarmStartingTest, E.LinearClassifier, E.LinearRegressor
    )
