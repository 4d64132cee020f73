"""The dashboard's pure helpers: how values travel in links, how numbers are written, who is family."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dashboard.services.scaling import family_member
from dashboard.state import atlas
from dashboard.state.share import BOOL, P_VALUE, Codec
from dashboard.widgets.controls import MODE_CODEC, OPTIMAL, OWN
from specbound.core.architecture import ModelShape
from specbound.core.profile import SpectralProfile
from specbound.io.atlas import save_atlas
from specbound.io.models import resolve
from specbound.present.numbers import format_log


@pytest.mark.parametrize(
    "codec, value, text",
    [
        (BOOL, True, "1"),
        (BOOL, False, "0"),
        (P_VALUE, 0.25, "0.25"),
        (P_VALUE, 1 / 3, "0.333333"),
        (MODE_CODEC, OWN, "own"),
        (MODE_CODEC, OPTIMAL, "optimal"),
    ],
)
def test_codecs_write_and_read_link_values(codec: Codec, value: object, text: str) -> None:
    assert codec.format(value) == text
    expected = pytest.approx(value, rel=1e-6) if isinstance(value, float) else value
    assert codec.parse(text) == expected


@pytest.mark.parametrize(
    "codec, junk",
    [
        (BOOL, "maybe"),
        (P_VALUE, "2.5"),
        (P_VALUE, "-0.1"),
        (P_VALUE, "nan"),
        (P_VALUE, "inf"),
        (P_VALUE, "abc"),
        (MODE_CODEC, "mine"),
    ],
)
def test_codecs_refuse_junk(codec: Codec, junk: str) -> None:
    with pytest.raises(ValueError):
        codec.parse(junk)


@pytest.mark.parametrize(
    "log_value, text",
    [
        (math.log(20573.03), "20,573"),
        (math.log(6.8537e28), "6.854 × 10²⁸"),
        (math.log(0.005), "0.005000"),
        (math.log(2.5e-4), "2.500 × 10⁻⁴"),
        (-math.inf, "0"),
        (math.nan, "—"),
        (812.345 * math.log(10), "2.213 × 10⁸¹²"),
    ],
)
def test_numbers_given_by_their_log(log_value: float, text: str) -> None:
    assert format_log(log_value) == text


def _profile(name: str) -> SpectralProfile:
    shape = ModelShape(1, 4, 2, 4)
    m = shape.num_matrices
    return SpectralProfile(name, "r", shape, np.ones((m, 1)), np.full(m, 4), np.ones(m), np.ones(m))


def test_an_uploaded_atlas_travels_in_links_by_digest(tmp_path: Path) -> None:
    content = save_atlas([_profile("L2-H128")], tmp_path / "a.npz").read_bytes()
    stored = atlas.store_upload("class.npz", content)
    name = atlas.model_name(stored, "L2-H128")
    link = atlas.link_form(name)
    assert link == f"atlas:@{stored.stem}#L2-H128" and str(stored.parent) not in link
    assert atlas.from_link(link) == name
    assert resolve(atlas.from_link(link)).member == "L2-H128"
    assert atlas.from_link("atlas:@not-a-digest#x") == "atlas:@not-a-digest#x"  # left for resolve to refuse
    elsewhere = save_atlas([_profile("m")], tmp_path / "b.npz")
    assert atlas.link_form(atlas.model_name(elsewhere, "m")) == atlas.model_name(elsewhere, "m")
    assert atlas.link_form("minilm-l6") == "minilm-l6"


@pytest.mark.parametrize(
    "shape, name, member",
    [
        (ModelShape(4, 256, 4, 1024), "/some/dir/checkpoint", True),  # a miniature's shape, whatever its name
        (ModelShape(4, 256, 8, 1024), "L4-H256", True),  # heads of 32, but named as the miniature it stands for
        (ModelShape(4, 256, 8, 1024), "checkpoint", False),  # heads of 32 and no miniature name
        (ModelShape(3, 256, 4, 1024), "L3-H256", True),  # off the grid, named to match its shape
        (ModelShape(3, 256, 4, 1024), "L4-H256", False),  # a name that does not match the shape
        (ModelShape(6, 384, 12, 1536), "minilm-l6", False),
    ],
)
def test_family_members_by_shape_or_a_matching_alias(shape: ModelShape, name: str, member: bool) -> None:
    assert family_member(shape, name) is member


@pytest.mark.parametrize(
    "model, stem",
    [
        ("/srv/uploads/tmp_x1/my-lora", "my-lora"),  # a server's directory: its short name, never the path
        ("C:\\models\\fine tune", "fine_tune"),
        ("google/bert_uncased_L-2_H-128_A-2", "google_bert_uncased_L-2_H-128_A-2"),  # a Hub id stays whole
        ("minilm-l6", "minilm-l6"),
    ],
)
def test_a_download_is_named_by_the_model_s_short_name(model: str, stem: str) -> None:
    from dashboard.widgets.export import file_stem
    from specbound.core.profile import full_dims_of

    shape = ModelShape(2, 8, 2, 16)
    singular = np.zeros((shape.num_matrices, shape.hidden_size))
    singular[:, 0] = 1.0
    ones = np.ones(shape.num_matrices)
    profile = SpectralProfile(model, "", shape, singular, full_dims_of(shape), ones, ones)
    assert file_stem(profile) == stem
