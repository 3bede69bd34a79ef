"""``best_of_n``: the whole budget as independent samples of one prompt (JAXBench's baseline)."""

from __future__ import annotations

from jaxbench.agents.base import Context, Method, register_method


@register_method("best_of_n")
class BestOfN(Method):
    def run(self, ctx: Context) -> None:
        prompt = ctx.prompt()
        slots = ctx.budget.take(ctx.budget.remaining)
        ctx.map(lambda slot: ctx.propose(f"s{slot}", prompt, slot, origin="sample"), slots)
