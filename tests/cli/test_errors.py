import numpy as np
import pytest

from albert_keras.cli.errors import report
from albert_keras.presets import get_preset


def _raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 (the test hands every error to report)
        return e
    raise AssertionError("no error")


def _report(error, capsys, verbose=False):
    try:
        raise error
    except Exception as e:  # noqa: BLE001 (report reads the exception being handled)
        status = report(e, "finetune", verbose)
    return status, capsys.readouterr().err


def test_our_own_refusal_is_one_line_with_status_2(capsys):
    error = _raised(lambda: get_preset("albert_huge"))
    status, err = _report(error, capsys)
    assert status == 2
    assert err.startswith("albert-keras finetune: error: unknown preset 'albert_huge'")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_verbose_adds_the_traceback_to_an_input_error(capsys):
    status, err = _report(_raised(lambda: get_preset("albert_huge")), capsys, verbose=True)
    assert status == 2 and "Traceback" in err and "families.py" in err
    assert err.strip().splitlines()[-1].startswith("albert-keras finetune: error: unknown")


@pytest.mark.parametrize("call", [lambda: np.zeros(3).reshape(2), lambda: {}["key"],
                                  lambda: len(None)])
def test_an_error_from_a_library_or_a_type_error_is_a_bug_with_its_traceback(call, capsys):
    status, err = _report(_raised(call), capsys)
    assert status == 1 and "Traceback" in err
    assert "albert-keras finetune: internal error:" in err and "please report it" in err


def test_a_missing_file_is_the_users(tmp_path, capsys):
    error = _raised(lambda: open(tmp_path / "absent.csv"))
    status, err = _report(error, capsys)
    assert status == 2 and "No such file or directory" in err and "Traceback" not in err


def test_a_file_that_is_not_json_is_the_users_wherever_it_was_parsed(tmp_path, capsys):
    import json

    path = tmp_path / "config.json"
    path.write_text("{not json")
    status, err = _report(_raised(lambda: json.loads(path.read_text())), capsys)
    assert status == 2 and "Expecting property name" in err


def test_tensorflows_missing_file_is_the_users(tmp_path, capsys):
    import tensorflow as tf

    error = _raised(lambda: tf.io.read_file(str(tmp_path / "absent.tfrecord")))
    assert type(error).__name__ == "NotFoundError"
    status, err = _report(error, capsys)
    assert status == 2 and "Traceback" not in err
