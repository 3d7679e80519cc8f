"""CI's sample of the long parametrized checks (tests/sampling.py)."""

import types

import pytest

from tests.sampling import choose


def _item(name, param, keep=None, group=None, path="tests/t.py"):
    kwargs = {"keep": keep, **({"group": group} if group else {})}
    marker = types.SimpleNamespace(kwargs=kwargs) if keep else None
    return types.SimpleNamespace(
        path=path, originalname=name, nodeid=f"{path}::{name}[{param}]",
        get_closest_marker=lambda _, m=marker: m)


def _items():
    return ([_item("long", p, keep=2) for p in "abcdef"]
            + [_item("other", p, keep=1) for p in "xyz"] + [_item("plain", "q")])


def test_each_marked_test_keeps_its_count_and_unmarked_tests_all_run():
    kept, left_out = choose(_items(), "c0ffee")
    names = [i.originalname for i in kept]
    assert names.count("long") == 2 and names.count("other") == 1 and "plain" in names
    assert len(left_out) == 4 + 2
    # kept in the collected order
    order = [i.nodeid for i in _items()]
    assert [i.nodeid for i in kept] == sorted((i.nodeid for i in kept), key=order.index)


def test_one_commit_always_runs_the_same_sets_and_commits_rotate_through_all():
    first = [i.nodeid for i in choose(_items(), "c0ffee")[0]]
    assert first == [i.nodeid for i in choose(_items(), "c0ffee")[0]]
    seen = set()
    for commit in range(40):
        seen.update(i.nodeid for i in choose(_items(), f"{commit:040x}")[0])
    assert seen == {i.nodeid for i in _items()}


def test_a_group_pools_single_tests_from_several_files():
    pooled = [_item(f"slow{n}", "", keep=2, group="backends", path=f"tests/t{n}.py")
              for n in range(5)]
    kept, left_out = choose(pooled + [_item("plain", "q")], "c0ffee")
    assert len([i for i in kept if i.originalname.startswith("slow")]) == 2
    assert len(left_out) == 3
    seen = set()
    for commit in range(40):
        seen.update(i.nodeid for i in choose(pooled, f"{commit:040x}")[0])
    assert seen == {i.nodeid for i in pooled}


def test_a_group_with_two_keeps_is_an_error():
    pooled = [_item("a", "", keep=1, group="g"), _item("b", "", keep=2, group="g")]
    with pytest.raises(ValueError, match="sampled group 'g'"):
        choose(pooled, "c0ffee")
