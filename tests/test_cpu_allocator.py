"""The process keeps freed memory for the next step where the user set
nothing: glibc's mallopt settings and TensorFlow's BFC CPU allocator."""

import subprocess
import sys

from albert_keras.cpu_allocator import BFC_VARIABLE
from albert_keras.cpu_allocator import MALLOC_SETTINGS
from albert_keras.cpu_allocator import keep_the_heap
from albert_keras.cpu_allocator import use_bfc_allocator


class _Libc:
    def __init__(self):
        self.calls = []

    def mallopt(self, parameter, value):
        self.calls.append((parameter.value, value.value))
        return 1


def test_the_heap_settings_are_set_unless_the_user_set_one():
    libc = _Libc()
    assert keep_the_heap({}, libc) == {name: value for name, (_, value) in
                                       MALLOC_SETTINGS.items()}
    assert sorted(libc.calls) == sorted(MALLOC_SETTINGS.values())
    assert all(value < 2**31 for _, value in libc.calls)  # mallopt takes an int
    libc = _Libc()
    assert keep_the_heap({"MALLOC_MMAP_THRESHOLD_": "65536"}, libc) == {}
    assert libc.calls == []


def test_bfc_is_asked_for_only_before_tensorflow_and_never_over_the_users_value():
    env = {}
    assert use_bfc_allocator(env, modules={}) and env == {BFC_VARIABLE: "true"}
    env = {}
    assert not use_bfc_allocator(env, modules={"tensorflow": object()}) and env == {}
    env = {BFC_VARIABLE: "false"}
    assert not use_bfc_allocator(env, modules={}) and env == {BFC_VARIABLE: "false"}


def test_importing_the_package_sets_the_variable_before_tensorflow_loads():
    code = ("import os, sys; import albert_keras; "
            "print(os.environ.get('TF_CPU_ALLOCATOR_USE_BFC'))")
    env = {k: v for k, v in __import__("os").environ.items() if k != BFC_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == "true"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**env, BFC_VARIABLE: "false"}, check=True)
    assert done.stdout.strip().splitlines()[-1] == "false"
