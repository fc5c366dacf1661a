"""Seeded data: deterministic, shaped like the real service's data."""

from __future__ import annotations

import re

from contractsdk.sandbox._catalog import Term
from contractsdk.sandbox._seed import build_seed

_NAME = re.compile(r"contract_[a-z][A-Za-z0-9]*")


def _depth(term: Term) -> int:
    below = [_depth(child) for option in term.options for child in option.nested]
    return 1 + max(below, default=0)


def test_same_seed_gives_same_data() -> None:
    """Two builds from one seed agree on every id, name and credential."""
    build_seed.cache_clear()
    first = build_seed(7)
    build_seed.cache_clear()
    second = build_seed(7)
    assert first.summary() == second.summary()
    assert first.api_keys == second.api_keys
    assert first.client_secret == second.client_secret
    assert [t.id for t in first.catalog.terms.values()] == [
        t.id for t in second.catalog.terms.values()
    ]


def test_different_seeds_give_different_ids() -> None:
    """Another seed changes the ids (so clients cannot hard-code them)."""
    a, b = build_seed(0), build_seed(1)
    assert [u.id for u in a.users] != [u.id for u in b.users]
    assert [t.id for t in a.catalog.types] != [t.id for t in b.catalog.types]
    assert a.api_keys != b.api_keys


def test_every_user_owns_a_personal_team() -> None:
    """Each seeded user owns a team named "Personal Team" and it is listed first."""
    seed = build_seed(0)
    teams = {t.id: t for t in seed.teams}
    for user in seed.users:
        personal = teams[user.personal_team_id]
        assert personal.name == "Personal Team"
        assert personal.owner_ids == (user.id,)
        assert user.team_ids[0] == personal.id


def test_shared_teams_leave_some_users_out() -> None:
    """Shared teams have owners and members, and some users belong to none of them."""
    seed = build_seed(0)
    shared = [t for t in seed.teams if t.name != "Personal Team"]
    assert len(shared) >= 3
    for team in shared:
        assert team.owner_ids
        assert team.member_ids
        outsiders = [
            u for u in seed.users if u.id not in team.owner_ids and u.id not in team.member_ids
        ]
        assert outsiders


def test_id_magnitudes_look_like_the_service() -> None:
    """Contract-type ids have 16 digits, template ids are small, term ids are 4 digits."""
    seed = build_seed(0)
    assert all(len(str(t.id)) == 16 and t.id < 2**53 for t in seed.catalog.types)
    assert all(0 < tid < 1000 for tid in seed.catalog.templates)
    assert all(1000 <= tid < 10_000 for tid in seed.catalog.terms)


def test_term_ids_are_unique_across_templates() -> None:
    """No term id appears in two templates."""
    seed = build_seed(0)
    every = [t.id for template in seed.catalog.templates.values() for t in template.walk()]
    assert len(every) == len(set(every))


def test_there_are_at_least_three_types_with_two_versions_each() -> None:
    """AST, NDA and Employment exist, each with two or more template versions."""
    seed = build_seed(0)
    names = [t.name for t in seed.catalog.types]
    for wanted in ("Assured Shorthold Tenancy Agreement", "Non-Disclosure Agreement"):
        assert wanted in names
    assert "Employment Agreement" in names
    assert all(len(t.template_ids) >= 2 for t in seed.catalog.types)


def test_newer_versions_change_the_terms() -> None:
    """Each type's newest template differs from its oldest by a term or an option."""
    seed = build_seed(0)
    for ctype in seed.catalog.types:
        newest = seed.catalog.templates[ctype.template_ids[0]]
        oldest = seed.catalog.templates[ctype.template_ids[-1]]

        def shape(template_id: int) -> set[tuple[str, tuple[str, ...]]]:
            template = seed.catalog.templates[template_id]
            return {(t.name, t.option_values) for t in template.walk()}

        assert shape(newest.id) != shape(oldest.id), ctype.name
        assert int(newest.version) > int(oldest.version)


def test_tenancy_template_is_large_and_nested_three_levels() -> None:
    """The AST-like template has ~42 top-level terms and options nested 3 term levels deep."""
    seed = build_seed(0)
    template = seed.catalog.templates[seed.catalog.types[0].template_ids[-1]]
    assert len(template.terms) >= 40
    assert max(_depth(t) for t in template.terms) == 3
    by_name = template.by_name
    chain = [by_name["contract_rentFrequency"], by_name["contract_breakClause"]]
    assert by_name["contract_breakClauseStart"].parent_id == chain[1].id
    assert chain[1].parent_id == chain[0].id
    assert all(_NAME.fullmatch(t.name) for t in template.walk())
    assert by_name["contract_name"] is template.terms[0]
