"""``client.terms``: the questions a template version asks."""

from __future__ import annotations

from contractsdk.models import Term
from contractsdk.resources._base import Id, Resource, path_id
from contractsdk.validation import TermSet

__all__ = ["Terms"]


class Terms(Resource):
    """Read terms (reference/service-api.md §7, Terms, and §8 for their tree)."""

    async def list(self, template_id: Id, /, *, refresh: bool = False) -> TermSet:
        """Return the terms of a template version as a tree.

        A template version does not change once published (a change in the law makes a new
        version, service-api.md §4), so the client fetches each version's terms once and
        keeps them; ``refresh=True`` fetches them again.

        Args:
            template_id: The template version's id.
            refresh: Fetch again even if the client has them.
        """
        return await self._client._term_set(template_id, refresh=refresh)  # path_id() checks it

    async def get(self, term_id: Id, /) -> Term:
        """Return one term (with its nested options)."""
        return await self._client._get(f"/terms/{path_id(term_id, 'term_id')}", Term)
