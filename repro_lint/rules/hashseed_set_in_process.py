"""RPL106: ``PYTHONHASHSEED`` set inside the program it is meant to affect."""

from __future__ import annotations

import os

import libcst as cst

from repro_lint.arguments import argument, dict_literal_items, literal_str
from repro_lint.diagnostics import FixSafety
from repro_lint.rule import FileContext, Invalid, Rule, Valid

VARIABLE = "PYTHONHASHSEED"
_SETTERS = frozenset({"os.environ.setdefault", "os.putenv"})
# Starting another interpreter: a variable set before this reaches the child, which is the
# one legitimate use (a launcher, or a program that re-executes itself).
_LAUNCHERS_PREFIXES = (
    "subprocess.",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "asyncio.create_subprocess",
)
# Programs that are (or start) a Python interpreter.
_PYTHON_PROGRAMS = ("python", "torchrun", "accelerate", "deepspeed", "pytest", "ipython")
_LAUNCHERS = frozenset(
    {
        "os.system",
        "os.popen",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "multiprocessing.get_context",
        "multiprocessing.set_start_method",
        "torch.multiprocessing.get_context",
        "torch.multiprocessing.set_start_method",
        "torch.distributed.run.main",
        "torch.distributed.launcher.api.elastic_launch",
    }
)


class HashseedSetInProcess(Rule):
    """
    ## What it does
    Flags assignments to the `PYTHONHASHSEED` environment variable inside a program:
    `os.environ["PYTHONHASHSEED"] = ...`, `os.environ.setdefault(...)`, `os.putenv(...)`
    and `os.environ.update(...)`, unless the same file starts other Python interpreters
    (`subprocess` or `os.system` running `python`, `sys.executable`, `torchrun`... or a
    command that is not a literal, `os.exec*`, spawn-context multiprocessing), whose
    environment it then legitimately prepares. A child that is not Python
    (`subprocess.run(["tar", ...])`) does not care about the variable and exempts nothing.

    ## Why is this bad?
    Python salts `str`/`bytes` hashes once, when the interpreter starts, from
    `PYTHONHASHSEED`. Setting the variable afterwards changes nothing for the running
    program: set iteration order and `hash()` of strings still differ between runs
    (measured), so code that looks pinned is not. Only child processes started later
    inherit the value.

    ## Fix safety
    Display-only: set `PYTHONHASHSEED` where the interpreter is launched (the shell, the job
    script, the container's environment), or have the program re-execute itself with it.

    ## Options
    None.

    ## Known limitations
    Child processes started from another module than the one setting the variable are not
    seen; suppress the line with `# noqa: RPL106` in such a launcher.

    ## References
    - Python documentation: `PYTHONHASHSEED`, `object.__hash__`
    """

    CODE = "RPL106"
    MESSAGE = "`PYTHONHASHSEED` set at run time does not affect this interpreter"
    FIX_TITLE = "Set `PYTHONHASHSEED` in the launcher, before Python starts"
    FIX_SAFETY = FixSafety.DISPLAY_ONLY
    TRIGGERS = (VARIABLE,)
    INVALID = (
        Invalid('import os\nos.environ["PYTHONHASHSEED"] = "0"\n'),
        Invalid("import os\n\n\ndef seed_all(s):\n    os.environ['PYTHONHASHSEED'] = str(s)\n"),
        Invalid('import os\nos.environ.setdefault("PYTHONHASHSEED", "0")\n'),
        Invalid('from os import putenv\nputenv("PYTHONHASHSEED", "1")\n'),
        Invalid('import os\nos.environ.update({"PYTHONHASHSEED": "0", "A": "1"})\n'),
        Invalid("import os\nos.environ.update(PYTHONHASHSEED='0')\n"),
        Invalid(
            "import os\nimport subprocess\n\n\ndef seed_all(seed):\n"
            '    os.environ["PYTHONHASHSEED"] = str(seed)\n\n\ndef unpack(path):\n'
            '    subprocess.run(["tar", "-xf", path], check=True)\n',
            note="an unrelated child (tar) does not exempt the assignment",
        ),
    )
    VALID = (
        Valid(
            'import os\nimport subprocess\nenv = dict(os.environ)\nenv["PYTHONHASHSEED"] = "0"\n'
            'subprocess.run(["python", "train.py"], env=env)\n',
            note="the environment of a child process",
        ),
        Valid(
            'import os\nimport sys\nif os.environ.get("PYTHONHASHSEED") != "0":\n'
            '    os.environ["PYTHONHASHSEED"] = "0"\n'
            "    os.execv(sys.executable, [sys.executable, *sys.argv])\n",
            note="re-executing itself with the variable set",
        ),
        Valid('import os\nprint(os.environ.get("PYTHONHASHSEED"))\n', note="only read"),
        Valid('import os\nos.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\n'),
        Valid('import os\nenviron = {}\nenviron["PYTHONHASHSEED"] = "0"\n', note="a plain dict"),
        Valid(
            'import os\nimport subprocess\nimport sys\nos.environ["PYTHONHASHSEED"] = "0"\n'
            "subprocess.check_call([sys.executable, '-m', 'train'])\n",
            note="the variable prepares the Python child this program starts",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._found: list[cst.CSTNode] = []
        self._launches = False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if (
                type(subscript) is cst.Subscript
                and self.qualified_name(subscript.value) == "os.environ"
                and len(subscript.slice) == 1
                and type(subscript.slice[0].slice) is cst.Index
                and literal_str(subscript.slice[0].slice.value) == VARIABLE
            ):
                self._found.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified is None:
            return
        if qualified in _LAUNCHERS or qualified.startswith(_LAUNCHERS_PREFIXES):
            if self._may_start_python(node, qualified):
                self._launches = True
        elif qualified in _SETTERS:
            name = argument(node, "key", 0)
            if name is not None and literal_str(name.value) == VARIABLE:
                self._found.append(node)
        elif qualified == "os.environ.update":
            if any(arg.keyword is not None and arg.keyword.value == VARIABLE for arg in node.args):
                self._found.append(node)
                return
            first = argument(node, None, 0)
            items = dict_literal_items(first.value) if first is not None else None
            if items is not None and VARIABLE in items:
                self._found.append(node)

    def _may_start_python(self, node: cst.Call, qualified: str) -> bool:
        """Whether a launch may start a Python interpreter, the only kind of child the
        variable affects: not ``subprocess.run(["tar", ...])`` or ``os.system("nvidia-smi")``.
        A command that is not a literal may be anything."""
        if not qualified.startswith(("subprocess.", "os.")) or qualified.startswith(
            ("os.spawn", "os.posix_spawn")
        ):
            return True
        first = argument(node, "args", 0)
        if first is None:
            return True
        value = first.value
        if isinstance(value, cst.List | cst.Tuple):
            if not value.elements:
                return True
            value = value.elements[0].value
            program = literal_str(value)
        else:
            text = literal_str(value)
            if type(value) is cst.FormattedString and value.parts:
                head = value.parts[0]
                text = head.value if type(head) is cst.FormattedStringText else None
            program = text.split()[0] if text and text.split() else None
        if program is None:
            # ``sys.executable``, a variable, an f-string starting with a value: may be Python.
            return True
        return os.path.basename(program).startswith(_PYTHON_PROGRAMS)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._launches:
            return
        for node in self._found:
            self.report(node)
