"""The learning policy, pure: ``step(control, observation, busy time)``, no event loop."""

from __future__ import annotations

import math
import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contractsdk._headers import RateLimitHints
from contractsdk._ratelimit._control import (
    BACKOFF_MAX,
    BETA,
    CUBIC_K,
    ECHO_SHARE,
    FIRST_BETA,
    K_LONGEST,
    K_MAX,
    LATELY_SPAN,
    MAX_CUT,
    MAX_SHORTFALL,
    MIN_RATE,
    PACING,
    PROBE_FLOOR,
    PROBE_SPACING,
    QUOTA_RUN,
    QUOTA_STREAK,
    REFUSAL_SHARE,
    SAME_BETA,
    SAME_W,
    SLOW_START_CLAMP,
    SLOW_START_DOUBLING,
    SLOW_START_RATE,
    STRIKE_WINDOW,
    Control,
    Decision,
    Observation,
    grow,
    initial,
    said_pause,
    step,
)

MAX_PAUSE = 60.0


def decide(
    control: Control, observation: Observation, now: float = 10.0, **kwargs: object
) -> Decision:
    options: dict[str, object] = {"ceiling": None, "adaptive": True, "max_pause": MAX_PAUSE}
    options.update(kwargs)
    return step(control, observation, now, **options)  # type: ignore[arg-type]  # checked above


def cubic(w_max: float = 100.0, t_fail: float = 0.0) -> Control:
    return Control(
        rate=w_max * BETA, phase="cubic", w_max=w_max, t_fail=t_fail, k=CUBIC_K, stamp=t_fail
    )


def test_initial_states() -> None:
    """A known limit is paced under it; an unknown one slow-starts, or is not paced at all."""
    assert initial(100.0, adaptive=True, now=0.0) == Control(rate=99.0, phase="paced")
    assert initial(None, adaptive=True, now=0.0).rate == SLOW_START_RATE
    assert initial(None, adaptive=False, now=0.0).rate is None


def test_slow_start_doubles_per_busy_period_only_when_backlogged() -> None:
    """It doubles every SLOW_START_DOUBLING busy seconds, and only while fully used."""
    control = initial(None, adaptive=True, now=0.0)
    doubled = grow(control, ceiling=None, sent=0.0, backlogged=True, now=SLOW_START_DOUBLING)
    assert doubled.rate == pytest.approx(2 * SLOW_START_RATE)
    idle = grow(control, ceiling=None, sent=0.0, backlogged=False, now=SLOW_START_DOUBLING)
    assert idle.rate == SLOW_START_RATE


@pytest.mark.parametrize("shared", [False, True])
def test_a_slow_start_whose_stamp_is_long_past_still_grows_finitely(shared: bool) -> None:
    """540 busy seconds after its stamp, the doubling overflowed: OverflowError to callers.

    (Shared, a step that only moves the stamp is not written, so it stays old while a
    client sends under its rate.) The rise is clamped to a multiple of what is sent.
    """
    control = initial(None, adaptive=True, now=0.0)
    for now in (540.0, 1e6):
        grown = grow(control, ceiling=None, sent=9.0, backlogged=True, now=now, shared=shared)
        assert grown.rate == pytest.approx(SLOW_START_CLAMP * 9.0)
    told = grow(control, ceiling=100.0, sent=0.0, backlogged=True, now=1e6, shared=shared)
    assert told.rate == pytest.approx(100.0 * PACING)


def test_a_fresh_429_leaving_the_slow_start_cuts_by_first_beta() -> None:
    """Leaving the slow start: 0.7 of what was admitted lately, a new epoch.

    However far that is below the rate in use (a slow start overshoots by up to its
    clamp), the curve climbs back toward the rate that failed.
    """
    control = Control(rate=200.0, phase="slow")
    seen = Observation(status=429, backlogged=True, admitted_rate=150.0, answered=40, admitted=39)
    left = decide(control, seen).control
    assert (left.phase, left.epoch, left.w_max) == ("cubic", 1, 200.0)
    assert left.rate == pytest.approx(150 * FIRST_BETA)
    assert left.left_slow == 10.0  # the busy time it left at; later decreases carry it
    later = Observation(status=429, epoch_age=0.5, answered=20, admitted=15)
    assert decide(attrs.evolve(left, rate=170.0), later).control.left_slow == 10.0
    lagging = decide(control, attrs.evolve(seen, admitted_rate=60.0))
    assert lagging.control.rate == pytest.approx(60 * FIRST_BETA)  # not MAX_CUT of 200
    assert lagging.control.w_max == 200.0


def test_a_slow_start_refused_within_its_first_answers_cuts_the_rate_in_use() -> None:
    """Too few answers to measure a rate by: FIRST_BETA of the rate in use.

    A server without a burst refused the second request: one admitted answer in half a
    second reads as 2/s against a limit of 12, and the pause after the cut to 1.3/s held
    four creates for 0.8 s.
    """
    control = Control(rate=20.0, phase="slow")
    seen = Observation(status=429, backlogged=True, admitted_rate=1.8, answered=2, admitted=1)
    decision = decide(control, seen)
    assert decision.control.rate == pytest.approx(20 * FIRST_BETA)
    assert decision.pause < 0.1
    measured = decide(control, attrs.evolve(seen, answered=5, admitted=4)).control
    assert measured.rate == pytest.approx(1.8 * FIRST_BETA)


def test_after_the_slow_start_the_curve_starts_at_the_new_rate_and_climbs_fast() -> None:
    """The curve is continuous at the decrease and concave: half the way back in K/4."""
    left = decide(Control(rate=1600.0, phase="slow"), Observation(status=429)).control
    assert left.rate is not None
    start = grow(left, ceiling=None, sent=0.0, backlogged=True, now=left.t_fail + 1e-9)
    assert start.rate == pytest.approx(left.rate)
    soon = grow(left, ceiling=None, sent=0.0, backlogged=True, now=left.t_fail + left.k / 4)
    assert soon.rate is not None
    assert soon.rate - left.rate > (left.w_max - left.rate) / 2
    back = grow(left, ceiling=None, sent=0.0, backlogged=True, now=left.t_fail + left.k)
    assert back.rate == pytest.approx(1600.0)


def test_w_is_the_admitted_rate_of_an_old_epoch() -> None:
    """Under steady overload every server admits its limit: W is the admitted rate."""
    control = cubic(w_max=120.0)
    control = attrs.evolve(control, rate=130.0)
    observation = Observation(
        status=429, backlogged=True, epoch_age=2.0, answered=260, admitted=200
    )
    decision = decide(control, observation)
    assert decision.control.w_max == pytest.approx(100.0)
    assert decision.control.rate == pytest.approx(90.0)


def test_w_never_exceeds_a_limit_the_server_named() -> None:
    """With X-RateLimit-Limit, W is at most that: a pause's refill hides the overshoot."""
    control = attrs.evolve(cubic(), rate=127.0)
    observation = Observation(
        status=429,
        backlogged=True,
        epoch_age=1.5,
        answered=98,
        admitted=97,
        admitted_second=127.0,
        hint=100.0,
    )
    assert decide(control, observation).control.w_max == pytest.approx(100.0)


def test_a_429_in_a_young_epoch_backs_off_without_lowering_again() -> None:
    """The overload the last decrease answered still drains: the pause doubles per streak.

    A fixed window refuses everything until it ends; lowering the rate for each of those
    refusals collapsed it to a tenth of the limit (measured against a bare fixed window).
    """
    control = cubic(w_max=100.0)
    pauses = []
    for streak in range(1, 12):
        young = Observation(  # a run long enough that half of it never caps the pause
            status=429, epoch_age=0.05, answered=streak, streak=streak, refused_for=10.0
        )
        decision = decide(control, young)
        assert decision.control == control
        pauses.append(decision.pause)
    assert pauses[0] == pytest.approx(1 / control.rate)  # type: ignore[operator]  # set
    assert pauses[1] == pytest.approx(2 * pauses[0])
    assert pauses == sorted(pauses)
    assert pauses[-1] == BACKOFF_MAX


def test_a_pause_lasts_no_longer_than_half_the_run_of_429s_it_answers() -> None:
    """A pause probes for the end of a refusal: past it, the time is lost.

    A fixed window of 1,000/s refuses everything until its second ends. Doubling from a
    millisecond reached BACKOFF_MAX (spread to 2.1 s) a second into the refusal, and the
    client stood still for two seconds after the window had reset (loopback: 0.73 R).
    """
    control = Control(rate=1000.0, phase="cubic", w_max=1100.0, t_fail=9.9, k=2.0)

    def pause(streak: int, refused_for: float) -> float:
        refused = Observation(
            status=429, epoch_age=0.05, answered=streak, streak=streak, refused_for=refused_for
        )
        return decide(control, refused).pause

    assert pause(12, 1.0) == pytest.approx(REFUSAL_SHARE * 1.0)  # not 2 s
    assert pause(12, 0.05) == pytest.approx(PROBE_FLOOR)  # no shorter than a floor
    assert pause(12, 10.0) == BACKOFF_MAX  # a long refusal: as before
    assert pause(3, 1.0) == pytest.approx(0.004)  # doubling still rules early on
    assert pause(12, 0.0) == pytest.approx(PROBE_FLOOR)  # no run timed: the floor


@pytest.mark.parametrize("jitter", [0.5, 0.8, 1.49])
def test_jitter_spreads_a_bare_429s_pause_but_not_a_named_one(jitter: float) -> None:
    """A bare 429's pause is scaled by the jitter drawn; a Retry-After is kept exactly.

    Clients that share a key but not their state, refused together, would come back
    together (the longest pause is BACKOFF_MAX for all) and be refused together again.
    """
    control = cubic(w_max=100.0)
    for streak in (1, 3, 30):
        bare = Observation(status=429, epoch_age=0.05, answered=streak, streak=streak)
        plain = decide(control, bare).pause
        assert decide(control, bare, jitter=jitter).pause == pytest.approx(plain * jitter)
    named = Observation(status=429, hints=RateLimitHints(retry_after=1.5), streak=30)
    assert decide(control, named, jitter=jitter).pause == 1.5
    capped = Observation(status=429, epoch_age=0.05, answered=30, streak=30)
    assert decide(control, capped, jitter=jitter, max_pause=0.5).pause <= 0.5


def test_an_echo_changes_nothing_but_the_pause() -> None:
    """A 429 for a request granted before the last decrease is not a new signal."""
    control = cubic()
    decision = decide(control, Observation(status=429, fresh=False))
    assert decision.control == control
    assert decision.pause > 0


def test_the_same_w_found_again_lengthens_the_probe_and_cuts_less() -> None:
    """K doubles (to K_MAX) each time a decrease finds W where the last one did.

    And the rate drops to SAME_BETA of W, not BETA: the limit is known.
    """
    control = attrs.evolve(cubic(w_max=100.0), rate=100.0)
    observation = Observation(status=429, backlogged=True, epoch_age=5, answered=500, admitted=500)
    for expected in (2 * CUBIC_K, 4 * CUBIC_K, K_MAX, K_MAX):
        decided = decide(control, observation).control
        assert decided.rate == pytest.approx(100.0 * SAME_BETA)
        control = attrs.evolve(decided, rate=100.0)
        assert control.k_base == expected
    # A W found elsewhere: the full cut, and K as it was.
    elsewhere = decide(attrs.evolve(cubic(w_max=150.0), rate=100.0), observation).control
    assert elsewhere.rate == pytest.approx(100.0 * BETA)
    assert elsewhere.k_base == CUBIC_K


def test_at_a_low_rate_probes_are_spaced_by_requests() -> None:
    """Found again and again at 25/s, K doubles past K_MAX to PROBE_SPACING requests' worth.

    A probe costs a 429 or so whatever the rate: at 25/s, K_MAX seconds would be one in
    half as many requests as at 50/s.
    """
    observation = Observation(status=429, backlogged=True, epoch_age=20, answered=500, admitted=500)
    ks = []
    control = attrs.evolve(cubic(w_max=25.0), rate=25.0)
    for _ in range(5):
        control = attrs.evolve(decide(control, observation).control, rate=25.0)
        ks.append(control.k_base)
    assert ks == [2 * CUBIC_K, 4 * CUBIC_K, 8 * CUBIC_K, 8 * CUBIC_K, 8 * CUBIC_K]
    assert 8 * CUBIC_K == PROBE_SPACING / 25.0 > K_MAX
    # At 1/s, 400 requests would be 400 s: a raised limit is still found within minutes.
    slow = Observation(status=429, backlogged=True, epoch_age=900, answered=900, admitted=900)
    control = attrs.evolve(cubic(w_max=1.0), rate=1.0)
    for _ in range(8):
        control = attrs.evolve(decide(control, slow).control, rate=1.0)
    assert control.k_base == K_LONGEST < PROBE_SPACING / 1.0


def test_a_probe_that_costs_a_named_pause_is_made_more_rarely() -> None:
    """A 429 whose ``Retry-After`` stands the bucket still costs that pause's requests too.

    At 100/s a bare 429 costs one request, and K stops at K_MAX; a 429 saying
    ``Retry-After: 1`` costs a second's worth, and K doubles on to K_LONGEST. A burst-1
    server that rounds its wait up to a second stood the client still for a second at
    every probe, some 10 s apart.
    """
    refused = Observation(status=429, backlogged=True, epoch_age=5, answered=500, admitted=500)
    paused = attrs.evolve(refused, hints=RateLimitHints(retry_after=1.0))
    for observation, most in ((refused, K_MAX), (paused, K_LONGEST)):
        control = attrs.evolve(cubic(w_max=100.0), rate=100.0)
        for _ in range(6):
            control = attrs.evolve(decide(control, observation).control, rate=100.0)
        assert control.k_base == most


def test_cubic_climbs_back_to_w_in_k_then_probes_above() -> None:
    """The curve is back at W after K busy seconds, and above it later."""
    control = cubic(w_max=100.0)
    at_k = grow(control, ceiling=None, sent=100.0, backlogged=True, now=CUBIC_K)
    assert at_k.rate == pytest.approx(100.0)
    later = grow(control, ceiling=None, sent=100.0, backlogged=True, now=3 * CUBIC_K)
    assert later.rate is not None and later.rate > 100.0


def test_rate_stays_between_min_rate_and_the_ceiling() -> None:
    """However many 429s, the rate is at least MIN_RATE and at most 0.99 x the ceiling."""
    control = initial(50.0, adaptive=True, now=0.0)
    for now in range(200):
        control = decide(
            control, Observation(status=429, backlogged=True), now=float(now), ceiling=50.0
        ).control
        assert control.rate is not None and MIN_RATE <= control.rate <= 50 * PACING
    for now in range(200, 400):
        control = grow(control, ceiling=50.0, sent=1e6, backlogged=True, now=float(now))
        assert control.rate is not None and control.rate <= 50 * PACING


def test_remaining_zero_on_a_success_never_lowers_the_rate() -> None:
    """Remaining 0 is a hint: it empties the bucket and plateaus, never decreases."""
    exhausted = Observation(status=200, hints=RateLimitHints(remaining=0.0, reset=1.0))
    for control in (initial(5.0, adaptive=True, now=0.0), Control(rate=80.0, phase="slow")):
        decision = decide(control, exhausted)
        assert decision.control.rate == control.rate
        assert decision.tokens == 0.0
        assert decision.pause == 0.0


def test_a_limit_in_the_headers_ends_the_slow_start_there() -> None:
    """X-RateLimit-Limit (per the longest reset) is where the slow start jumps."""
    decision = decide(Control(rate=20.0, phase="slow"), Observation(status=200, hint=400.0))
    assert decision.control.rate == pytest.approx(400 * PACING)
    assert decision.control.phase == "cubic"


def test_the_learning_never_climbs_past_a_limit_the_server_named() -> None:
    """Past a window's quota lie only 429s and a pause to the window's end: not probed."""
    probing = attrs.evolve(cubic(w_max=100.0, t_fail=0.0), rate=99.0, k=2.0)
    later = decide(probing, Observation(status=200, backlogged=True, hint=100.0), now=30.0)
    assert later.control.rate == pytest.approx(100.0 * PACING)
    unnamed = decide(probing, Observation(status=200, backlogged=True), now=30.0)
    assert unnamed.control.rate is not None and unnamed.control.rate > 100.0


def test_at_a_known_limit_a_lone_429_is_a_strike_not_a_decrease() -> None:
    """The first fresh 429 at the told limit pauses and starts an epoch; the rate stays."""
    told = initial(100.0, adaptive=True, now=0.0)
    struck = decide(told, Observation(status=429), now=5.0, ceiling=100.0)
    assert struck.control.rate == told.rate
    assert struck.control.phase == "paced"
    assert struck.control.epoch == told.epoch + 1  # its echoes are not fresh
    assert struck.pause > 0


def test_a_second_strike_within_the_window_decreases() -> None:
    """Another fresh 429 within STRIKE_WINDOW: the limit really is lower than told."""
    told = initial(100.0, adaptive=True, now=0.0)
    struck = decide(told, Observation(status=429), now=5.0, ceiling=100.0).control
    second = decide(struck, Observation(status=429), now=5.5, ceiling=100.0).control
    assert second.rate is not None and told.rate is not None
    assert second.rate < told.rate
    assert second.phase == "cubic"
    assert second.epoch == struck.epoch + 1


def test_a_run_of_429s_is_one_strike_that_lasts_until_its_last_pause_ends() -> None:
    """No success between: a window refusing until a told burst leaves it, not a lower limit.

    The run keeps the told rate and probes every PROBE_FLOOR at least; the strike lasts
    until the pause after its last 429. A limit really lower refuses again after a success
    within STRIKE_WINDOW of that: the second strike.
    """
    told = initial(100.0, adaptive=True, now=0.0)
    at_limit = Observation(status=429, answered=81, admitted=80)  # 0.8 s of the told rate
    control = decide(told, at_limit, now=0.81, ceiling=100.0).control
    for n, now in enumerate((0.82, 0.92, 1.02), start=2):
        run = decide(control, Observation(status=429, streak=n), now=now, ceiling=100.0)
        assert (run.control.rate, run.control.phase) == (told.rate, "paced")
        assert run.pause >= PROBE_FLOOR
        assert run.control.t_fail == pytest.approx(now + run.pause)
        control = run.control
    after = control.t_fail + STRIKE_WINDOW
    again = decide(control, Observation(status=429), now=after - 0.01, ceiling=100.0).control
    assert again.rate is not None and told.rate is not None
    assert (again.phase, again.rate < told.rate) == ("cubic", True)
    lone = decide(control, Observation(status=429), now=after + 0.01, ceiling=100.0).control
    assert (lone.phase, lone.rate) == ("paced", told.rate)


def test_a_run_of_429s_right_after_a_start_is_two_strikes() -> None:
    """A strike before the epoch admitted RUN_AFTER seconds of the told rate: not excused.

    Eight processes each told the whole limit are refused after two or three successes
    each; the second 429 in a row is the second strike, and the rate drops at once.
    """
    told = initial(100.0, adaptive=True, now=0.0)
    early = Observation(status=429, answered=4, admitted=3)
    struck = decide(told, early, now=0.05, ceiling=100.0).control
    second = decide(struck, Observation(status=429, streak=2), now=0.06, ceiling=100.0)
    assert second.control.phase == "cubic"
    assert second.control.rate is not None and told.rate is not None
    assert second.control.rate < told.rate


def test_a_fleet_counts_its_run_excuse_for_every_process() -> None:
    """Shared by four, a process that saw 20 admitted stands for 80: the run is excused."""
    told = initial(100.0, adaptive=True, now=0.0)
    fleet = Observation(status=429, answered=21, admitted=20, scale=4.0)
    struck = decide(told, fleet, now=0.81, ceiling=100.0).control
    run = decide(struck, Observation(status=429, streak=2, scale=4.0), now=0.82, ceiling=100.0)
    assert (run.control.phase, run.control.rate) == ("paced", told.rate)
    alone = decide(told, attrs.evolve(fleet, scale=1.0), now=0.81, ceiling=100.0).control
    assert not alone.strike_run


def test_strikes_far_apart_never_lower_a_told_rate() -> None:
    """A 429 now and then (once per STRIKE_WINDOW or rarer) is noise at a told limit."""
    control = initial(100.0, adaptive=True, now=0.0)
    for n in range(1, 6):
        control = decide(
            control, Observation(status=429), now=n * (STRIKE_WINDOW + 0.1), ceiling=100.0
        ).control
        assert control.rate == 100.0 * PACING


def test_back_at_the_ceiling_a_lone_429_is_a_strike_again() -> None:
    """After a decrease, the climb back to the told limit earns the benefit of the doubt."""
    back = attrs.evolve(cubic(w_max=100.0), rate=100.0 * PACING)
    struck = decide(back, Observation(status=429), now=20.0, ceiling=100.0).control
    assert (struck.rate, struck.phase) == (100.0 * PACING, "paced")
    measured = Observation(
        status=429, epoch_age=2.0, answered=100, admitted=99, admitted_second=95.0
    )
    below = decide(cubic(w_max=100.0), measured, now=20.0, ceiling=100.0)
    assert below.control.rate == pytest.approx(90.0 * BETA)  # W is at most the rate in use


@pytest.mark.parametrize(
    ("hints", "status", "expected"),
    [
        (RateLimitHints(retry_after=5.0), 429, 5.0),
        (RateLimitHints(retry_after=5.0), 503, 5.0),
        (RateLimitHints(retry_after=5.0), 200, None),
        (RateLimitHints(retry_after=1e9), 429, MAX_PAUSE),
        (RateLimitHints(remaining=0.0, reset=3.0), 429, 3.0),
        (RateLimitHints(remaining=0.0, reset=1e7), 429, MAX_PAUSE),
        (RateLimitHints(remaining=0.0, reset=3.0), 200, None),
        (RateLimitHints(), 429, None),
        # A whole-second Retry-After rounds up an empty counter's finer reset: the reset.
        (RateLimitHints(retry_after=1.0, remaining=0.0, reset=0.19), 429, 0.19),
        (RateLimitHints(retry_after=60.0, remaining=0.0, reset=59.5), 429, 59.5),
        # …but not a reset of another counter, a counter with room, or a finer Retry-After.
        (RateLimitHints(retry_after=60.0, remaining=0.0, reset=0.3), 429, 60.0),
        (RateLimitHints(retry_after=1.0, remaining=3.0, reset=0.19), 429, 1.0),
        (RateLimitHints(retry_after=0.25, remaining=0.0, reset=0.19), 429, 0.25),
        (RateLimitHints(retry_after=1.0, remaining=0.0, reset=0.19), 503, 1.0),
    ],
)
def test_pauses_the_server_asked_for_are_cut_to_max_pause(
    hints: RateLimitHints, status: int, expected: float | None
) -> None:
    """Retry-After or an empty counter's reset, never longer than max_pause."""
    observation = Observation(status=status, hints=hints)
    assert said_pause(observation, max_pause=MAX_PAUSE) == expected


def test_a_bare_429_pauses_one_interval_of_the_lowered_rate() -> None:
    """No Retry-After: one interval of the new rate, so the queue does not pile in."""
    decision = decide(initial(100.0, adaptive=True, now=0.0), Observation(status=429))
    assert decision.control.rate is not None
    assert decision.pause == pytest.approx(1 / decision.control.rate)


def test_just_out_of_the_slow_start_every_429_of_the_young_epoch_doubles_the_pause() -> None:
    """A server that remembers the slow start's overload refuses every other request.

    No two 429s come in a row then, but each of the epoch's four doubles the pause: eight
    intervals (at least PROBE_FLOOR from the second on). An epoch later, or once old
    enough to measure, 429s in a row count again.
    """
    exited = attrs.evolve(cubic(w_max=120.0), rate=40.0, epoch=1, t_fail=9.9)
    young = Observation(
        status=429, fresh=True, streak=1, answered=6, admitted=2, epoch_age=0.1, refused_for=0.5
    )
    assert decide(exited, young).pause == pytest.approx(8 / 40.0)
    later = attrs.evolve(exited, epoch=2)
    assert decide(later, young).pause == pytest.approx(1 / 40.0)
    measuring = attrs.evolve(young, epoch_age=0.3, answered=30, admitted=26)
    decreased = decide(exited, measuring)
    assert decreased.control.epoch == 2
    assert decreased.control.rate is not None
    assert decreased.pause == pytest.approx(1 / decreased.control.rate)


def test_not_adaptive_keeps_the_rate() -> None:
    """adaptive=False: the rate never moves; the server's pauses still apply."""
    control = initial(100.0, adaptive=False, now=0.0)
    decision = decide(
        control, Observation(status=429, hints=RateLimitHints(retry_after=2.0)), adaptive=False
    )
    assert decision.control == control
    assert decision.pause == 2.0


@pytest.mark.parametrize("status", [200, 201, 204, 404, 429, 500, 503])
@pytest.mark.parametrize("phase", ["paced", "slow", "cubic"])
def test_step_is_total(status: int, phase: str) -> None:
    """Any answer in any phase gives a decision within the invariants."""
    control = Control(rate=50.0, phase=phase, w_max=60.0, k=CUBIC_K)  # type: ignore[arg-type]  # phases as strings
    for hints in (
        RateLimitHints(),
        RateLimitHints(retry_after=1e12, remaining=0.0, reset=1e12),
        RateLimitHints(limit=1e9, remaining=1e9),
    ):
        decision = decide(control, Observation(status=status, hints=hints, epoch_age=9.0))
        assert 0.0 <= decision.pause <= MAX_PAUSE
        rate = decision.control.rate
        assert rate is not None and rate >= MIN_RATE


# --------------------------------------------------------------------------------------
# Properties: any sequence of answers keeps the invariants (Hypothesis)


def _span(rng: random.Random, low: float, high: float) -> float:
    """Either end, just above the low end, or anywhere on a log scale.

    The policy changes behaviour at small values (a rate near MIN_RATE, a hint of a few
    per second, a second of busy time), which values drawn evenly from [0, 1e9] never hit.
    """
    pick = rng.random()
    if pick < 0.1:
        return low
    if pick < 0.2:
        return high
    if pick < 0.4:
        return rng.uniform(low, min(high, low + 1))
    value = math.exp(rng.uniform(math.log(max(low, 1e-6)), math.log(high)))
    return min(high, max(low, value))


def _maybe(rng: random.Random, low: float, high: float) -> float | None:
    return None if rng.random() < 0.5 else _span(rng, low, high)


def _observation(rng: random.Random) -> Observation:
    answered = int(_span(rng, 0, 10_000))
    return Observation(
        status=rng.choice([200, 201, 204, 400, 404, 429, 429, 429, 500, 503]),
        hints=RateLimitHints(
            retry_after=_maybe(rng, 0, 1e15),
            limit=_maybe(rng, 0, 1e9),
            window=_maybe(rng, 0, 1e7),
            remaining=_maybe(rng, 0, 1e9),
            reset=_maybe(rng, 0, 1e15),
        ),
        fresh=rng.random() < 0.5,
        sent=_span(rng, 0, 1e6),
        answered=answered,
        admitted=min(answered, int(_span(rng, 0, 10_000))),
        admitted_rate=_span(rng, 0, 1e6),
        admitted_second=_span(rng, 0, 1e6),
        scale=_span(rng, 1, 64),
        epoch_age=_span(rng, 0, 1e4),
        hint=_maybe(rng, 1e-3, 1e6),
        backlogged=rng.random() < 0.5,
        streak=rng.randint(1, 40),
        refused_for=_span(rng, 0, 1e4),
    )


@given(seed=st.integers(0, 2**64 - 1))
@settings(max_examples=200, deadline=None)
def test_any_sequence_of_answers_keeps_the_invariants(seed: int) -> None:
    """Rate within [MIN_RATE, ceiling x PACING] (or None), pause within [0, max_pause].

    Hypothesis draws a seed (replayed from its database, fixed under CI); the sequence of
    up to 60 answers is drawn from it in plain Python, a hundred times cheaper than drawn
    field by field, with values aimed at the ends and the small numbers where the policy
    turns. A step that breaks an invariant fails with the seed and the step's index.
    """
    rng = random.Random(seed)
    ceiling = None if rng.random() < 0.3 else _span(rng, 0.01, 1e5)
    adaptive = rng.random() < 0.5
    now = 0.0
    control = initial(ceiling, adaptive=adaptive, now=now)
    for index in range(rng.randint(0, 60)):
        observation = _observation(rng)
        now += _span(rng, 0, 10)
        epoch = control.epoch
        decision = step(
            control,
            observation,
            now,
            ceiling=ceiling,
            adaptive=adaptive,
            max_pause=MAX_PAUSE,
            jitter=0.5 + rng.random(),  # as the limiter draws it
        )
        where = f"step {index}: {observation} after {control}"
        assert 0.0 <= decision.pause <= MAX_PAUSE, where
        control = decision.control
        assert control.epoch in (epoch, epoch + 1), where
        if control.epoch != epoch:
            assert observation.throttled and observation.fresh, where
        rate = control.rate
        if ceiling is None and not adaptive:
            assert rate is None, where
            continue
        assert rate is not None and math.isfinite(rate), where
        if ceiling is not None:
            assert rate <= ceiling * PACING * (1 + 1e-9), where
        assert rate >= min(MIN_RATE, ceiling * PACING if ceiling else MIN_RATE) * (1 - 1e-9), where


def test_a_fleet_counts_its_answers_together() -> None:
    """One of eight processes sees an eighth of the answers: they count for all.

    The epoch is old enough to act on when the fleet's answers are, not this process's
    alone (else 429s storm while it waits); with too few answers of its own to measure W
    by, it cuts by BETA.
    """
    control = attrs.evolve(cubic(w_max=200.0), rate=180.0)
    alone = Observation(status=429, epoch_age=1.5, answered=3, admitted=2, admitted_rate=12.0)
    assert decide(control, alone).control == control  # young: back off only
    fleet = attrs.evolve(alone, scale=8.0)
    assert decide(control, fleet).control.rate == pytest.approx(180.0 * BETA)


def test_a_slow_start_is_held_to_twice_what_is_sent() -> None:
    """A slow start grows no further than thrice what is sent, backlogged or not.

    A client that cannot send its rate does not learn that it is too high: against a bare
    fixed window of 1,000 a second, a slow start free of it reached 5,266/s before the
    window's quota ran out. Shared, each process grows the rate by its own view of the
    busy clock, and the one furthest ahead would win.
    """
    control = Control(rate=100.0, phase="slow")
    for shared in (False, True):
        held = grow(control, ceiling=None, sent=60.0, backlogged=True, now=1.0, shared=shared)
        assert held.rate == pytest.approx(SLOW_START_CLAMP * 60.0)
    free = grow(control, ceiling=None, sent=900.0, backlogged=True, now=1.0)
    assert free.rate == pytest.approx(100.0 * 2 ** (1.0 / SLOW_START_DOUBLING))  # under 3 x 900


def test_what_was_admitted_lately_counts_only_over_an_epoch_as_long_as_its_span() -> None:
    """In a younger epoch the meter still holds the last epoch's answers and burst."""
    control = attrs.evolve(cubic(w_max=60.0), rate=58.0)
    young = Observation(status=429, epoch_age=0.25, answered=10, admitted=6, admitted_second=46.0)
    assert decide(control, young).control.w_max == pytest.approx(29.0)  # MAX_CUT of 58
    older = attrs.evolve(young, epoch_age=LATELY_SPAN, admitted=20)
    assert decide(control, older).control.w_max == pytest.approx(46.0)


def test_a_windows_memory_is_not_the_same_limit_found_again() -> None:
    """K doubles when a decrease finds W where the last one did, but not from a memory.

    A sliding log of 25/s refused 20.5/s while it had admitted 25 over the last second:
    its memory, not the limit. Taken for "the same limit found again", K doubled, and the
    curve sat at an underestimated W (21.3) for the rest of the run (0.88 R).
    """
    control = Control(rate=20.5, phase="cubic", w_max=21.3, t_fail=7.0, k=2.0, epoch=2)
    memory = Observation(
        status=429,
        epoch_age=0.57,
        answered=12,
        admitted=11,
        admitted_second=25.0,
        sent=20.0,
        backlogged=True,
    )
    left = decide(control, memory).control
    assert left.k_base == CUBIC_K  # not doubled
    assert left.w_max == pytest.approx(21.3)  # climbs back to what the last second admitted
    found = attrs.evolve(memory, epoch_age=LATELY_SPAN + 0.5, answered=30, admitted=29)
    assert decide(control, found).control.k_base == 2 * CUBIC_K  # the limit, found again


def test_a_window_that_remembers_the_last_overload_does_not_set_w() -> None:
    """A young epoch admitting far less than it sends: the rate drops, W stays the rate.

    A sliding log refuses for a second after a slow start filled it, admitting only as its
    entries of a second ago expire (30/s, the slow start's first); taken for the limit,
    that collapsed the rate to half and left a convex climb of many seconds back to it.
    """
    control = attrs.evolve(cubic(w_max=312.0), rate=74.0)
    echo = Observation(status=429, epoch_age=0.21, answered=13, admitted=6)  # 29/s
    left = decide(control, echo).control
    assert left.epoch == control.epoch + 1
    assert left.rate == pytest.approx(74.0 * MAX_CUT * BETA)
    assert left.w_max == pytest.approx(74.0)  # the curve climbs back to the rate in use
    # A measure above ECHO_SHARE of the rate (a bucket still refusing a rate above its
    # limit) or an epoch a second old (past the window's memory) sets W as always.
    bucket = attrs.evolve(echo, admitted=8)  # 38/s
    assert decide(control, bucket).control.w_max == pytest.approx(8 / 0.21)
    old = attrs.evolve(echo, epoch_age=LATELY_SPAN, answered=62, admitted=29)
    assert decide(control, old).control.w_max == pytest.approx(74.0 * MAX_CUT)
    assert ECHO_SHARE * 74.0 < 38.0


def test_a_429_under_what_the_server_admitted_lately_is_a_windows_memory() -> None:
    """Refused at 71/s while the server admitted 99 over the last second: not W = 71.

    A sliding log that still holds the last overload's entries refuses a rate under its
    limit for up to a second. Taken for W, that left the rate at 0.71 of the limit for
    seconds (CUBIC is flat around W); the curve now climbs back to the last second's rate.
    """
    control = attrs.evolve(cubic(w_max=129.6), rate=71.1, epoch=2)
    echo = Observation(
        status=429, epoch_age=0.22, answered=14, admitted=12, admitted_second=99.0
    )  # 55/s over the epoch
    left = decide(control, echo).control
    assert left.epoch == 3
    assert left.rate == pytest.approx(71.1 * BETA)
    assert left.w_max == pytest.approx(99.0)
    # Above that rate, a bucket still refusing: the last second measures W (up to the
    # last W), where the young epoch alone read 55/s.
    above = decide(attrs.evolve(control, rate=120.0), echo).control
    assert above.w_max == pytest.approx(99.0)
    assert decide(attrs.evolve(control, w_max=90.0, rate=120.0), echo).control.w_max == 90.0
    # Before two decreases, the last second may hold the server's burst: no such reading.
    first = attrs.evolve(control, epoch=1)
    assert decide(first, echo).control.w_max == pytest.approx(12 / 0.22)
    # Nor within a busy second of leaving the slow start, however many decreases passed
    # in it (a GCRA of 25/s with a burst of 20: the second and third read 41 and 30/s).
    # (With a last W the measure is not far under: under MEMORY_W_SHARE of it, the
    # measure is a window's memory whenever it comes, as the next test says.)
    near = decide(attrs.evolve(control, left_slow=10.0 - 0.7, w_max=70.0), echo).control
    assert near.w_max == pytest.approx(12 / 0.22)
    assert near.rate == pytest.approx(12 / 0.22 * BETA)
    past = attrs.evolve(control, left_slow=10.0 - LATELY_SPAN)
    assert decide(past, echo).control.w_max == pytest.approx(99.0)
    # Under half the rate in use there, the measure is a window's memory of the slow
    # start: the curve climbs back to the rate in use, not to that second's 99.
    assert decide(attrs.evolve(first, rate=120.0), echo).control.w_max == pytest.approx(120.0)


def test_w_is_scaled_up_when_the_schedule_fell_short_of_its_rate() -> None:
    """Backlogged yet granting 12 % under its rate (late timers): W in the schedule's terms."""
    control = attrs.evolve(cubic(w_max=1100.0), rate=1080.0)
    short = Observation(
        status=429, backlogged=True, sent=950.0, epoch_age=2.0, answered=1910, admitted=1900
    )
    w_max = decide(control, short).control.w_max
    assert w_max == pytest.approx(950.0 * 1080.0 / 950.0)
    capped = attrs.evolve(short, sent=500.0, admitted=1000)
    assert decide(control, capped).control.w_max == pytest.approx(500.0 * MAX_SHORTFALL)
    # A pause in the last second (a run of 429s the epoch began with): the schedule sent
    # less because it stood still, not because its timers fired late. Per second it was
    # not paused, it sent its rate: nothing to scale.
    paused = attrs.evolve(short, sent=1080.0 * 0.6, paused=0.4)
    assert decide(control, paused).control.w_max == pytest.approx(950.0)
    # Short of its rate even so: scaled by what it fell short by.
    late = attrs.evolve(short, sent=950.0 * 0.6, paused=0.4)
    assert decide(control, late).control.w_max == pytest.approx(1080.0)


def test_the_shortfall_scaling_never_takes_w_past_the_last_one() -> None:
    """A probe above W after a long climb: the last second holds a refilled burst.

    A token bucket of 25/s, B = 20: W found at 24.5, the curve climbed from under it for
    five seconds (the bucket refilled) and on to 32/s before a 429. The last second
    admitted 28.3, burst included; scaled up by rate / sent for the climb it read 31.1,
    and the rate dropped to 28, still over the limit (two more 429s). The scaling makes
    up a shortfall under what the server has shown it admits, never a new high.
    """
    control = attrs.evolve(cubic(w_max=24.5), rate=32.2)
    probe = Observation(
        status=429,
        backlogged=True,
        sent=29.3,
        epoch_age=4.9,
        answered=125,
        admitted=124,
        admitted_second=28.3,
    )
    assert decide(control, probe).control.w_max == pytest.approx(28.3)
    # Under the last W, a pacer short of its rate is still made up for, up to that W.
    fell = attrs.evolve(control, w_max=40.0)
    assert decide(fell, probe).control.w_max == pytest.approx(28.3 * 32.2 / 29.3)
    assert decide(attrs.evolve(control, w_max=30.0), probe).control.w_max == 30.0


def test_a_climb_is_not_taken_for_a_pacer_short_of_its_rate() -> None:
    """A curve that climbed over the last second sent less than its rate now, by design.

    A sliding log of 100/s admits exactly 100 over any second. A curve climbing toward a
    W of 140 was refused at 127/s having sent what it asked for all along; scaled up by
    the rate now over what was sent, W read 15 % over the limit and 0.9 of it was still
    over. Only half the climb counts as shortfall (a token bucket's burst hides how far
    past the limit the crossing came), and the next rate is under the limit.
    """
    k = 1.765  # back to W in that many busy seconds, from 0.43 of it, with a K of 1
    control = Control(
        rate=0.0, phase="cubic", w_max=140.0, t_fail=8.8, k=k, k_base=1.0, stamp=10.0, epoch=3
    )

    def curve(t: float) -> float:
        return 140.0 * (1 + (1 - BETA) * (t - 8.8 - k) ** 3)

    rate = curve(10.0)
    mean = sum(curve(9.0 + (i + 0.5) / 1000) for i in range(1000)) / 1000  # the last second
    assert rate / mean > MAX_SHORTFALL  # steep: the old scaling's cap
    refused = Observation(
        status=429,
        backlogged=True,
        sent=mean,  # the pacer kept up with the curve
        epoch_age=1.2,
        answered=114,
        admitted=113,
        admitted_second=100.0,
    )
    decided = decide(attrs.evolve(control, rate=rate), refused).control
    assert decided.w_max == pytest.approx(100.0 * (mean + rate) / 2 / mean, rel=1e-3)
    assert decided.rate is not None and decided.rate < 100.0
    # A pacer short of the curve's own mean is made up for as before.
    late = attrs.evolve(refused, sent=mean * 0.9)
    assert decide(attrs.evolve(control, rate=rate), late).control.w_max == pytest.approx(
        100.0 * MAX_SHORTFALL
    )


def test_a_window_out_of_its_quota_after_the_slow_start_is_aimed_at() -> None:
    """A long run of 429s out of the slow start: the curve aims at the window's quota.

    Leaving a slow start at 77.5/s against a window of 25 a second, the curve climbed back
    toward 77.5 and overran the quota again a second later (four more 429s in a row).
    """
    control = Control(
        rate=25.9, phase="cubic", w_max=77.5, t_fail=0.68, k=3.76, stamp=0.68, epoch=1
    )
    refused = Observation(
        status=429,
        streak=QUOTA_STREAK,
        refused_for=QUOTA_RUN,
        epoch_age=0.3,
        answered=3,
        admitted=0,  # an epoch too young to measure: no decrease
        admitted_second=25.0,
    )
    aimed = decide(control, refused, now=1.0).control
    assert (aimed.w_max, aimed.rate, aimed.epoch) == (25.0, 25.0, 1)  # not a decrease
    assert aimed.t_fail == 1.0
    # From under the quota, the curve climbs to it.
    under = decide(attrs.evolve(control, rate=20.0), refused, now=1.0).control
    assert (under.w_max, under.rate) == (25.0, 20.0) and under.k > 0
    # A short run, a later epoch, or a quota not clearly under W: back off only.
    for observation, state in [
        (attrs.evolve(refused, streak=QUOTA_STREAK - 1), control),
        (attrs.evolve(refused, refused_for=QUOTA_RUN / 2), control),
        (refused, attrs.evolve(control, epoch=2)),
        (attrs.evolve(refused, admitted_second=77.5 * (1 - SAME_W / 2)), control),
    ]:
        assert decide(state, observation, now=1.0).control == state


def test_a_young_epoch_that_met_a_429_holds_the_rate() -> None:
    """Until the epoch can measure, a success after a 429 in it does not climb the curve."""
    control = cubic(w_max=100.0)
    later = control.t_fail + control.k
    draining = Observation(status=200, backlogged=True, epoch_age=0.1, answered=3, admitted=2)
    assert decide(control, draining, now=later).control.rate == control.rate
    clean = attrs.evolve(draining, admitted=3)
    climbed = decide(control, clean, now=later).control.rate
    assert climbed is not None and control.rate is not None and climbed > control.rate


def test_a_fleet_leaving_the_slow_start_levels_off_at_what_was_admitted() -> None:
    """Shared, the curve's W is what was admitted, not the rate that failed.

    Each process measures a K-th of the answers; a fast climb toward the rate that failed
    outran them (eight processes against nginx: 429s from 89 to 172/s).
    """
    slow = Control(rate=250.0, phase="slow")
    seen = Observation(
        status=429, backlogged=True, admitted_rate=20.0, scale=8.0, answered=5, admitted=4
    )
    shared = decide(slow, seen).control
    assert shared.w_max == pytest.approx(160.0)
    assert shared.rate == pytest.approx(160.0 * FIRST_BETA)
    alone = decide(slow, attrs.evolve(seen, scale=1.0)).control
    assert alone.w_max == 250.0


def test_a_fleet_leaving_the_slow_start_measures_what_was_admitted_lately() -> None:
    """Not the fleet's send rate times the share admitted over the whole slow start.

    Over the slow start nearly every answer was a success (30 of 31), so that product is
    nearly what the fleet sent (203 of 210/s) against a limit of 100: the fleet left it at
    142/s, and 10 more 429s followed. This process's admitted rate lately, times the four
    processes, is 132/s: W. The rate drops to FIRST_BETA of no less than half the rate in
    use (one process's measure may be far off), and the curve levels off at W instead of
    climbing back toward 160/s, which ran four processes into nginx's 429s again.
    """
    slow = Control(rate=320.0, phase="slow")
    seen = Observation(status=429, backlogged=True, sent=210.0, admitted_rate=33.0, scale=4.0)
    left = decide(slow, attrs.evolve(seen, answered=31, admitted=30)).control
    assert left.w_max == pytest.approx(132.0)
    assert left.rate == pytest.approx(160.0 * FIRST_BETA)


def test_a_fleet_probes_above_w_half_as_often() -> None:
    """Each process holds a reservation a 429 cannot take back: a fleet overruns more."""
    control = attrs.evolve(cubic(w_max=50.0), rate=110.0)
    seen = Observation(status=429, epoch_age=2.0, answered=200, admitted=199)
    alone = decide(control, seen).control
    fleet = decide(control, attrs.evolve(seen, answered=25, admitted=24, scale=8.0)).control
    assert alone.k_base == CUBIC_K
    assert fleet.k_base == 2 * CUBIC_K


def test_an_epoch_of_nothing_but_429s_backs_off_without_a_cut() -> None:
    """Every answer refused (a fixed window's dead end): nothing measured, nothing cut.

    Halving the rate for each such epoch collapsed it against a bare fixed window.
    """
    control = attrs.evolve(cubic(w_max=200.0), rate=170.0)
    refused = Observation(status=429, epoch_age=0.4, answered=5, admitted=0, streak=5)
    decision = decide(control, refused)
    assert decision.control == control
    assert decision.pause == pytest.approx(16 / 170.0)
    admitted = attrs.evolve(refused, answered=106, admitted=100, epoch_age=1.0, streak=1)
    assert decide(control, admitted).control.rate == pytest.approx(100.0 * BETA)


def test_a_fleet_measures_w_by_what_it_sent_too() -> None:
    """Shared, W is at least the fleet's send rate times the share admitted here.

    One process's answers scaled by the live count are a noisy stand-in for the fleet's:
    eight processes measured W from 62 to 139/s for a limit of 100.
    """
    control = attrs.evolve(cubic(w_max=150.0), rate=112.0)
    few = Observation(
        status=429,
        backlogged=True,
        sent=108.0,
        epoch_age=2.0,
        answered=20,
        admitted=19,
        admitted_second=8.0,
        scale=8.0,
    )
    # 108 * 19/20, in the schedule's terms (it granted 108 of its 112 a second).
    assert decide(control, few).control.w_max == pytest.approx(108.0 * 19 / 20 * 112 / 108)
    alone = attrs.evolve(few, scale=1.0, answered=200, admitted=190, admitted_rate=95.0)
    assert decide(control, alone).control.w_max == pytest.approx(95.0 * 112 / 108)


def test_too_few_answers_here_cut_by_beta_not_by_a_measurement() -> None:
    """One of eight processes saw one of two answers admitted: no sample to measure W by."""
    control = attrs.evolve(cubic(w_max=150.0), rate=124.0)
    few = Observation(
        status=429,
        backlogged=True,
        sent=124.0,
        epoch_age=0.7,
        answered=2,
        admitted=1,
        scale=8.0,
    )
    assert decide(control, few).control.rate == pytest.approx(124.0 * BETA)


def test_a_shared_slow_start_doubles_half_as_fast() -> None:
    """A fleet's 429s reach it a reservation per process late: it overshoots less so."""
    control = Control(rate=100.0, phase="slow")
    now = 2 * SLOW_START_DOUBLING
    alone = grow(control, ceiling=None, sent=1000.0, backlogged=True, now=now)
    shared = grow(control, ceiling=None, sent=1000.0, backlogged=True, now=now, shared=True)
    assert alone.rate == pytest.approx(400.0)
    assert shared.rate == pytest.approx(200.0)


def test_a_slow_start_refused_within_its_first_answers_keeps_its_own_terms() -> None:
    """Too few answers measure nothing, not even what was sent: W is the slow start's rate.

    One request sent over a busy half second reads as 2/s; taken for W, it cut the rate
    to 1.4/s. With five answers or more, what was sent counts as before.
    """
    control = initial(None, adaptive=True, now=0.0)
    lone = Observation(status=429, answered=1, admitted=0, sent=2.0)
    decision = decide(control, lone, now=0.5)
    assert decision.control.rate == pytest.approx(SLOW_START_RATE * FIRST_BETA)
    assert decision.control.w_max == pytest.approx(SLOW_START_RATE)
    enough = Observation(status=429, answered=8, admitted=7, admitted_rate=2.0, sent=2.0)
    assert decide(control, enough, now=0.5).control.w_max == pytest.approx(2.0)
