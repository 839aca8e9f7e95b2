"""RPL105: a scikit-learn call whose result depends on ``random_state`` made without it."""

from __future__ import annotations

import libcst as cst

from repro_lint.arguments import argument, has_double_star, with_keyword
from repro_lint.diagnostics import FixSafety
from repro_lint.estimators import needs_random_state
from repro_lint.rule import Invalid, Replace, Rule, Valid


class SklearnMissingRandomState(Rule):
    """
    ## What it does
    Flags scikit-learn estimators and functions whose result depends on `random_state`,
    called without it: `KMeans`, `MiniBatchKMeans`, random forests, extra trees, (histogram)
    gradient boosting, `TSNE`, `train_test_split`, `ShuffleSplit`,
    `StratifiedShuffleSplit`, `MLP*`, `SGD*`, the `sklearn.datasets.make_*` generators and
    more; `KFold`/`StratifiedKFold` only with `shuffle=True`, `LogisticRegression` only with
    a randomised solver (`sag`, `saga`, `liblinear`), `PCA` only with a randomised or ARPACK
    solver, `SVC` only with `probability=True`.

    ## Why is this bad?
    With `random_state=None` scikit-learn draws from numpy's global generator: the result
    is reproducible only if numpy is seeded and every such call happens in exactly the same
    order, which adding one unrelated call breaks. `random_state=<int>` makes each call
    repeatable on its own.

    ## Fix safety
    Safe: `random_state=<seed>` is added to the call.

    ## Options
    `seed` (default 0) is the value inserted.

    ## Known limitations
    Arguments that are not literals (`KFold(shuffle=args.shuffle)`) are not reported, nor
    are calls that pass `**kwargs`. Functions of the same name from other libraries
    (`datasets.Dataset.train_test_split`) are not scikit-learn's and are never reported.

    ## References
    - scikit-learn glossary: `random_state`; "Controlling randomness"
    """

    CODE = "RPL105"
    MESSAGE = "This scikit-learn call is random unless given `random_state`"
    FIX_TITLE = "Pass `random_state=<seed>`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("sklearn",)
    INVALID = (
        Invalid(
            "from sklearn.cluster import KMeans\nKMeans(n_clusters=3).fit(X)\n",
            fixed="from sklearn.cluster import KMeans\nKMeans(n_clusters=3, random_state=0).fit(X)\n",
        ),
        Invalid(
            "from sklearn.model_selection import train_test_split\n"
            "a, b = train_test_split(X, test_size=0.25)\n",
            fixed="from sklearn.model_selection import train_test_split\n"
            "a, b = train_test_split(X, test_size=0.25, random_state=1234)\n",
            config={"seed": 1234},
        ),
        Invalid(
            "import sklearn.ensemble as ens\nclf = ens.RandomForestClassifier(\n"
            "    n_estimators=10,\n)\n",
            fixed="import sklearn.ensemble as ens\nclf = ens.RandomForestClassifier(\n"
            "    n_estimators=10,\n    random_state=0,\n)\n",
            note="a multi-line call keeps its layout",
        ),
        Invalid(
            "from sklearn.model_selection import KFold\ncv = KFold(5, shuffle=True)\n",
            fixed="from sklearn.model_selection import KFold\ncv = KFold(5, shuffle=True, random_state=0)\n",
        ),
        Invalid(
            "from sklearn.datasets import make_classification\nX, y = make_classification()\n",
            fixed="from sklearn.datasets import make_classification\n"
            "X, y = make_classification(random_state=0)\n",
        ),
        Invalid(
            "from sklearn.linear_model import LogisticRegression\n"
            "LogisticRegression(solver='saga')\n",
        ),
        Invalid("from sklearn.manifold import TSNE\nTSNE()\n"),
    )
    VALID = (
        "from sklearn.cluster import KMeans\nKMeans(n_clusters=3, random_state=0)\n",
        Valid(
            "from sklearn.model_selection import KFold\ncv = KFold(5)\n",
            note="KFold without shuffle is deterministic",
        ),
        Valid(
            "from sklearn.linear_model import LogisticRegression\nLogisticRegression(C=1.0)\n",
            note="the default lbfgs solver ignores random_state",
        ),
        Valid(
            "from sklearn.model_selection import train_test_split\n"
            "train_test_split(X, shuffle=False)\n",
        ),
        Valid(
            "from datasets import load_dataset\nds = load_dataset('imdb')['train']\n"
            "parts = ds.train_test_split(test_size=0.1)\n",
            note="Hugging Face datasets' method of the same name",
        ),
        Valid(
            "from mylib import train_test_split, KMeans\ntrain_test_split(X)\nKMeans(3)\n",
            note="look-alikes from another library",
        ),
        Valid("from sklearn.cluster import KMeans\nKMeans(**params)\n"),
        Valid("from sklearn.model_selection import KFold\nKFold(5, shuffle=args.shuffle)\n"),
        Valid("from sklearn.decomposition import PCA\nPCA(n_components=2)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified is None or not needs_random_state(qualified, node):
            return
        if argument(node, "random_state") is not None or has_double_star(node):
            return
        self.report(node, fix=[Replace(node, self._with_random_state(node))])

    def _with_random_state(self, call: cst.Call) -> cst.Call:
        return with_keyword(call, "random_state", str(self.context.config.seed))
