"""Which scikit-learn calls draw from numpy's global generator unless given ``random_state``.

Data as code (by the last part of the qualified name, for names under ``sklearn.``), read by
RPL105 and by the module summaries, which count such a call as a use of numpy's global
generator (scikit-learn with ``random_state=None`` draws from it).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from repro_lint.arguments import argument, has_double_star, literal_bool, literal_str

# Always random without random_state.
ALWAYS = frozenset(
    {
        # clustering and mixtures
        "KMeans", "MiniBatchKMeans", "BisectingKMeans", "SpectralClustering",
        "SpectralBiclustering", "SpectralCoclustering", "GaussianMixture",
        "BayesianGaussianMixture",
        # trees and ensembles
        "DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier",
        "ExtraTreeRegressor", "RandomForestClassifier", "RandomForestRegressor",
        "ExtraTreesClassifier", "ExtraTreesRegressor", "GradientBoostingClassifier",
        "GradientBoostingRegressor", "HistGradientBoostingClassifier",
        "HistGradientBoostingRegressor", "IsolationForest", "RandomTreesEmbedding",
        "BaggingClassifier", "BaggingRegressor", "AdaBoostClassifier", "AdaBoostRegressor",
        # manifold learning and decomposition
        "TSNE", "MDS", "SpectralEmbedding", "TruncatedSVD", "FastICA",
        "LatentDirichletAllocation", "DictionaryLearning", "MiniBatchDictionaryLearning",
        "SparsePCA", "MiniBatchSparsePCA", "MiniBatchNMF",
        # linear models trained by stochastic or randomised solvers
        "SGDClassifier", "SGDRegressor", "SGDOneClassSVM", "Perceptron",
        "PassiveAggressiveClassifier", "PassiveAggressiveRegressor", "RANSACRegressor",
        "LinearSVC", "LinearSVR",
        # neural networks
        "MLPClassifier", "MLPRegressor", "BernoulliRBM",
        # splitting and search
        "ShuffleSplit", "StratifiedShuffleSplit", "GroupShuffleSplit", "RepeatedKFold",
        "RepeatedStratifiedKFold", "RandomizedSearchCV", "HalvingRandomSearchCV",
        "ParameterSampler",
        # random features and projections
        "GaussianRandomProjection", "SparseRandomProjection", "RBFSampler", "Nystroem",
        "SkewedChi2Sampler",
        # functions
        "shuffle", "resample", "permutation_importance", "mutual_info_classif",
        "mutual_info_regression",
    }
)  # fmt: skip


def _literal_in(
    keyword: str, position: int | None, values: frozenset[str]
) -> Callable[[cst.Call], bool]:
    def random(call: cst.Call) -> bool:
        arg = argument(call, keyword, position)
        return arg is not None and literal_str(arg.value) in values

    return random


def _flag_true(keyword: str, position: int | None) -> Callable[[cst.Call], bool]:
    def random(call: cst.Call) -> bool:
        arg = argument(call, keyword, position)
        return arg is not None and literal_bool(arg.value) is True

    return random


def _shuffles_by_default(call: cst.Call) -> bool:
    arg = argument(call, "shuffle")
    return arg is None or literal_bool(arg.value) is not False


# Random only with some arguments (literal values decide; anything else is not reported).
CONDITIONAL: dict[str, Callable[[cst.Call], bool]] = {
    "train_test_split": _shuffles_by_default,
    "KFold": _flag_true("shuffle", 1),
    "StratifiedKFold": _flag_true("shuffle", 1),
    "GroupKFold": _flag_true("shuffle", 1),
    "learning_curve": _flag_true("shuffle", None),
    "LogisticRegression": _literal_in("solver", None, frozenset({"sag", "saga", "liblinear"})),
    "Ridge": _literal_in("solver", None, frozenset({"sag", "saga"})),
    "RidgeClassifier": _literal_in("solver", None, frozenset({"sag", "saga"})),
    "Lasso": _literal_in("selection", None, frozenset({"random"})),
    "ElasticNet": _literal_in("selection", None, frozenset({"random"})),
    "MultiTaskLasso": _literal_in("selection", None, frozenset({"random"})),
    "MultiTaskElasticNet": _literal_in("selection", None, frozenset({"random"})),
    "PCA": _literal_in("svd_solver", None, frozenset({"randomized", "arpack"})),
    "KernelPCA": _literal_in("eigen_solver", None, frozenset({"randomized", "arpack"})),
    "NMF": _literal_in("init", None, frozenset({"random", "nndsvdar"})),
    "SVC": _flag_true("probability", None),
    "NuSVC": _flag_true("probability", None),
    "DummyClassifier": _literal_in("strategy", None, frozenset({"stratified", "uniform"})),
}


def needs_random_state(qualified: str, call: cst.Call) -> bool:
    """Whether a scikit-learn call's result depends on ``random_state``."""
    if not qualified.startswith("sklearn."):
        return False
    name = qualified.rsplit(".", 1)[-1]
    if name in ALWAYS:
        return True
    if name.startswith("make_") and qualified.startswith("sklearn.datasets."):
        return True
    condition = CONDITIONAL.get(name)
    return condition is not None and condition(call)


def draws_from_numpy(qualified: str, call: cst.Call) -> bool:
    """A scikit-learn call that draws from numpy's global generator: random without
    ``random_state``, and given none (nor a ``**mapping`` that may hold it)."""
    return (
        needs_random_state(qualified, call)
        and argument(call, "random_state") is None
        and not has_double_star(call)
    )


def is_function(qualified: str) -> bool:
    """A function (draws when called), not an estimator class (draws when fitted)."""
    return qualified.rsplit(".", 1)[-1][:1].islower()
