"""Property tests of row ids: the sequence encoding round-trips, and a table driven by
random appends, deletes, updates, merges and compactions agrees with a model that gives
each new row the next id and never changes or reuses one."""

from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fermion.table as ft
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.row_ids import UNASSIGNED, RowIdLookup, decode, encode, sequence_length
from tests.support.budget import examples

# runs of ids: a range, increasing with gaps, any order, or unassigned rows
_RUN = st.one_of(
    st.tuples(st.just("range"), st.integers(0, 2**40), st.integers(1, 300)),
    st.tuples(st.just("gaps"), st.integers(0, 2**40), st.integers(1, 300)),
    st.tuples(st.just("shuffled"), st.integers(0, 2**62), st.integers(1, 300)),
    st.tuples(st.just("pending"), st.just(0), st.integers(1, 50)),
)


def _ids(runs: list[tuple[str, int, int]], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = []
    for kind, start, n in runs:
        if kind == "range":
            parts.append(np.arange(start, start + n))
        elif kind == "gaps":
            parts.append(start + np.cumsum(rng.integers(1, 2**20, size=n)))
        elif kind == "shuffled":
            parts.append(rng.integers(0, start + 1, size=n))
        else:
            parts.append(np.full(n, UNASSIGNED))
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_RUN, max_size=6), st.integers(0, 2**32 - 1))
def test_sequences_round_trip(runs: list[tuple[str, int, int]], seed: int) -> None:
    ids = _ids(runs, seed)
    sequence = encode(ids)
    again = pb.RowIdSequence()
    again.ParseFromString(sequence.SerializeToString())
    assert sequence_length(again) == ids.size
    assert np.array_equal(decode(again), ids)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_lookup_finds_every_row_holding_an_id(sizes: list[int], seed: int) -> None:
    """Ids may repeat across fragments (a moved row's deleted original keeps its id):
    the lookup names every physical row holding each id asked, and nothing else."""
    rng = np.random.default_rng(seed)
    fragments = []
    for size in sizes:
        chunk = rng.integers(0, sum(sizes) * 2, size=size)
        if rng.random() < 0.5:  # ranges, as most fragments have
            start = int(rng.integers(0, sum(sizes) * 2))
            chunk = np.arange(start, start + size)
        fragments.append(pb.Fragment(physical_rows=size, row_ids=encode(chunk)))
    lookup = RowIdLookup.build(fragments)
    probe = rng.integers(0, sum(sizes) * 3, size=50)
    query, owner, offset = lookup.candidates(probe)
    got = sorted(zip(probe[query].tolist(), owner.tolist(), offset.tolist(), strict=True))
    wanted = set(probe.tolist())
    expected = sorted(
        (int(i), f, o)
        for f, fragment in enumerate(fragments)
        for o, i in enumerate(decode(fragment.row_ids).tolist())
        if i in wanted
        for _ in range(int((probe == i).sum()))
    )
    assert got == expected


_OP = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 12)),
    st.tuples(st.just("delete"), st.integers(2, 5)),
    st.tuples(st.just("update"), st.integers(2, 5)),
    st.tuples(st.just("merge"), st.integers(2, 5)),
    st.tuples(st.just("compact"), st.just(0)),
)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 15), st.lists(_OP, min_size=1, max_size=6))
def test_a_table_agrees_with_the_id_model(first: int, ops: list[tuple[str, int]]) -> None:
    uri = tempfile.mkdtemp()
    keys = list(range(first))
    ds = ft.write_dataset(pa.table({"key": keys, "v": [0] * first}), uri, max_rows_per_file=4)
    model = {i: (k, 0) for i, k in enumerate(keys)}  # row id -> (key, v)
    next_id, next_key, step = first, first, 0
    for kind, n in ops:
        step += 1
        live_keys = sorted(k for k, _ in model.values())
        if kind == "append":
            new = list(range(next_key, next_key + n))
            next_key += n
            ds.append(pa.table({"key": new, "v": [0] * n}), max_rows_per_file=5)
            model.update({next_id + j: (k, 0) for j, k in enumerate(new)})
            next_id += n
        elif kind == "delete":
            gone = {k for k in live_keys if k % n == 0}
            ds.delete(pc.field("key").isin(sorted(gone) or [-1]))
            model = {i: r for i, r in model.items() if r[0] not in gone}
        elif kind == "update":
            chosen = {k for k in live_keys if k % n == 1}
            if ds.count_rows() and chosen:
                ds.update(pc.field("key").isin(sorted(chosen)), set={"v": pc.scalar(step)})
                model = {i: (k, step if k in chosen else v) for i, (k, v) in model.items()}
        elif kind == "merge":
            matched = [k for k in live_keys if k % n == 0]
            fresh = [next_key, next_key + 1]
            next_key += 2
            source = pa.table({"key": matched + fresh, "v": [step] * (len(matched) + 2)})
            source = source.cast(ds.schema)
            (
                ds.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
                .execute(source)
            )  # fmt: skip
            model = {i: (k, step if k in matched else v) for i, (k, v) in model.items()}
            model.update({next_id + j: (k, step) for j, k in enumerate(fresh)})
            next_id += 2
        else:
            ds.compact_files(target_rows_per_fragment=7, materialize_deletions_threshold=0.0)
        table = ds.to_table(columns=["_rowid", "key", "v"])
        got = {
            r: (k, v)
            for r, k, v in zip(*(table[c].to_pylist() for c in ("_rowid", "key", "v")), strict=True)
        }
        assert len(got) == table.num_rows  # unique ids
        assert got == model, (kind, n)
        assert ds.manifest.next_row_id == next_id
    probe = sorted(set(range(next_id + 2)) - set(model)) + sorted(model)
    taken = ds.take_rowids(probe, columns=["_rowid", "key"], missing="skip")
    assert taken["_rowid"].to_pylist() == sorted(model)
    assert taken["key"].to_pylist() == [model[i][0] for i in sorted(model)]
