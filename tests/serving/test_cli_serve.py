"""``skbandit serve``'s user errors, and the HTTP face's extra imported lazily."""
# SPDX-License-Identifier: BSD-3-Clause

import subprocess
import sys

import joblib
import pytest

from skbandit.__main__ import main


def _user_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_serve_user_errors(tmp_path, capsys):
    db = str(tmp_path / "d.sqlite")
    message = _user_error(["serve", str(tmp_path / "none.joblib"), "--db", db], capsys)
    assert "no policy file" in message and "joblib.dump" in message
    joblib.dump({"not": "a policy"}, tmp_path / "dict.joblib")
    message = _user_error(["serve", str(tmp_path / "dict.joblib"), "--db", db], capsys)
    assert "holds a dict, not a policy" in message
    message = _user_error(["serve", "p.joblib", "--db", db, "--wait", "-1"], capsys)
    assert "--wait" in message


def test_import_skbandit_serving_does_not_import_fastapi():
    code = (
        "import sys, skbandit, skbandit.serving; "
        "assert 'fastapi' not in sys.modules and 'uvicorn' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_make_app_without_the_extra_names_it():
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "import skbandit.serving\n"
        "try:\n"
        "    skbandit.serving.make_app\n"
        "except ImportError as exc:\n"
        "    assert \"pip install 'skbandit[serve]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
