"""The learning policy where no other test pinned it.

5xx pauses, the finer reset's edges, the slow start's clock, the remaining-0 plateau, the
send clamp, a 429's tokens.
"""

from __future__ import annotations

import attrs
import pytest

from contractsdk._headers import RateLimitHints
from contractsdk._ratelimit._control import (
    BETA,
    COUNTER_MEMORY,
    CUBIC_K,
    FIRST_BETA,
    K_MAX,
    MAX_CUT,
    MEMORY_W_SHARE,
    PACING,
    PROBE_FLOOR,
    SEND_RATE_CLAMP,
    SLOW_START_DOUBLING,
    UNSURE_K,
    Control,
    Observation,
    grow,
    initial,
    said_pause,
)
from tests.test_ratelimit_control import MAX_PAUSE, cubic, decide


@pytest.mark.parametrize(
    ("status", "expected"), [(500, 5.0), (502, 5.0), (504, 5.0), (404, None), (409, None)]
)
def test_a_retry_after_pauses_on_a_5xx_but_not_on_another_error(
    status: int, expected: float | None
) -> None:
    """``Retry-After`` on any 5xx (500 included) pauses the bucket; on a 404 it does not."""
    observation = Observation(status=status, hints=RateLimitHints(retry_after=5.0))
    assert said_pause(observation, max_pause=MAX_PAUSE) == expected


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        # Retry-After 2 is not a reset of 0.5 rounded up (1): another counter's.
        (RateLimitHints(retry_after=2.0, remaining=0.0, reset=0.5), 2.0),
        (RateLimitHints(retry_after=2.0, remaining=0.0, reset=0.999), 2.0),
        (RateLimitHints(retry_after=2.0, remaining=0.0, reset=1.5), 1.5),  # 1.5 rounded up
        # A reset shown to the millisecond is itself rounded: 1.000 may be 1.0004 (2 up).
        (RateLimitHints(retry_after=2.0, remaining=0.0, reset=1.0), 1.0),
        # An entry leaving in 0.3 ms: "Reset: 0.000", "Retry-After: 1"; no pause.
        (RateLimitHints(retry_after=1.0, remaining=0.0, reset=0.0), 0.0),
    ],
)
def test_the_finer_reset_is_taken_only_for_the_retry_after_it_rounds_up_to(
    hints: RateLimitHints, expected: float
) -> None:
    """Only the reset that ``Retry-After`` rounds up to whole seconds replaces it."""
    observation = Observation(status=429, hints=hints)
    assert said_pause(observation, max_pause=MAX_PAUSE) == expected


def test_a_slow_start_doubles_from_its_own_stamp() -> None:
    """The doubling counts the busy time since the slow start last grew, not since 0."""
    control = Control(rate=20.0, phase="slow", stamp=100.0)
    grown = grow(control, ceiling=None, sent=0.0, backlogged=True, now=100.0 + SLOW_START_DOUBLING)
    assert grown.rate == pytest.approx(40.0)


def test_a_429_empties_the_bucket() -> None:
    """A 429 leaves the bucket no tokens, whatever its headers say is left."""
    named = Observation(status=429, hints=RateLimitHints(remaining=5.0, retry_after=1.0))
    for observation in (Observation(status=429), named):
        assert decide(cubic(), observation).tokens == 0.0
    assert (
        decide(cubic(), Observation(status=200, hints=RateLimitHints(remaining=7.0))).tokens == 7.0
    )


def test_without_pacing_a_bare_429_pauses_a_tenth_of_a_second() -> None:
    """Not adaptive and no limit known (no rate): a bare 429 still pauses 0.1 s."""
    control = initial(None, adaptive=False, now=0.0)
    decision = decide(control, Observation(status=429), adaptive=False)
    assert decision.pause == pytest.approx(0.1)


EXHAUSTED = Observation(status=200, hints=RateLimitHints(remaining=0.0, reset=1.0))


def test_the_remaining_zero_plateau_holds_the_rate_then_climbs_slowly() -> None:
    """Remaining 0 leaving a slow start: W is the rate in use, and the curve is flat there.

    The next busy moments neither drop the rate (the curve is at W, not before it) nor
    jump it; it probes above only after the plateau's K.
    """
    plateau = decide(Control(rate=80.0, phase="slow"), EXHAUSTED, now=10.0).control
    assert (plateau.phase, plateau.w_max, plateau.rate, plateau.hinted) == (
        "cubic",
        80.0,
        80.0,
        True,
    )
    assert plateau.k == CUBIC_K  # the server named no limit: the usual K
    soon = grow(plateau, ceiling=None, sent=80.0, backlogged=True, now=10.1)
    assert soon.rate == pytest.approx(80.0, rel=1e-3)
    later = grow(plateau, ceiling=None, sent=80.0, backlogged=True, now=10.0 + 3 * CUBIC_K)
    assert later.rate is not None and later.rate > 80.0


def test_a_named_limit_makes_the_plateau_probe_slowly() -> None:
    """With a limit in the headers, the plateau's K is K_MAX (the limit is trusted)."""
    named = attrs.evolve(EXHAUSTED, hint=100.0)  # a slow start at PACING of it already
    plateau = decide(Control(rate=99.0, phase="slow"), named, now=10.0).control
    assert (plateau.rate, plateau.k) == (99.0, K_MAX)


def test_a_plateau_well_under_a_named_limit_probes_at_the_usual_k() -> None:
    """Remaining 0 at half the limit the headers name is a counter without a burst.

    A server whose burst is 1 says it after every request: with K_MAX there, a jitter 429
    that cut a learning client to 20/s for a named limit of 40 held it near 20/s.
    """
    named = attrs.evolve(EXHAUSTED, hint=40.0)
    probing = attrs.evolve(cubic(w_max=19.5), rate=20.0)
    plateau = decide(probing, named, now=30.0).control
    assert (plateau.rate, plateau.k, plateau.hinted) == (20.0, probing.k_base, True)
    later = grow(plateau, ceiling=None, sent=20.0, backlogged=True, now=30.0 + 3 * CUBIC_K)
    assert later.rate is not None and later.rate > 40.0 * PACING


def test_the_remaining_zero_plateau_is_set_once_per_epoch() -> None:
    """A server with a burst of 1 says remaining 0 after every request: the rate still climbs.

    Every answer is such a hint, so the climb must come through them: the plateau's
    epoch had the rate pinned at the slow start's, 20/s for a limit of 40 (0.5 R).
    """
    plateau = decide(Control(rate=80.0, phase="slow"), EXHAUSTED, now=10.0).control
    again = decide(plateau, EXHAUSTED, now=10.0 + 3 * CUBIC_K).control
    assert again == grow(plateau, ceiling=None, sent=0.0, backlogged=False, now=10.0 + 3 * CUBIC_K)
    assert (again.w_max, again.hinted) == (80.0, True)
    assert again.rate is not None and again.rate > 80.0


def test_the_plateau_is_not_set_below_w() -> None:
    """Climbing back toward W after a decrease, remaining 0 does not stop the climb.

    It held the rate where the decrease left it: a client told 40/s against a server of
    40/s with a burst of 1 stayed at 31.7/s after two 429s.
    """
    below = cubic(w_max=100.0)  # at 90, under W
    climbed = decide(below, EXHAUSTED, now=1.0).control
    assert climbed == grow(below, ceiling=None, sent=0.0, backlogged=False, now=1.0)
    assert (climbed.w_max, climbed.hinted) == (100.0, False)
    assert climbed.rate is not None and 90.0 < climbed.rate < 100.0


def test_a_slow_start_told_the_limit_by_a_remaining_zero_answer_jumps_to_it() -> None:
    """A named limit wins over the plateau: a burst-1 server names it on an empty counter.

    Its every answer says remaining 0; the plateau at the slow start's rate came first
    and the limit the same headers named was never reached.
    """
    named = attrs.evolve(EXHAUSTED, hint=40.0)
    jumped = decide(Control(rate=20.0, phase="slow"), named, now=1.0).control
    assert (jumped.phase, jumped.rate, jumped.w_max) == ("cubic", 40.0 * PACING, 40.0 * PACING)


def test_a_curve_not_all_used_grows_no_further_than_twice_what_is_sent() -> None:
    """Not backlogged (the rate is not used up), the curve is held to SEND_RATE_CLAMP x sent."""
    control = cubic(w_max=100.0)
    idle = grow(control, ceiling=None, sent=20.0, backlogged=False, now=3 * CUBIC_K)
    assert idle.rate == pytest.approx(90.0)  # max(the rate in use, 2 x 20)
    busy = grow(control, ceiling=None, sent=60.0, backlogged=False, now=3 * CUBIC_K)
    assert busy.rate == pytest.approx(SEND_RATE_CLAMP * 60.0)  # the curve is at 180 by now


@pytest.mark.parametrize("rate", [100.0, 110.0])
def test_the_plateau_is_set_at_or_above_w(rate: float) -> None:
    """Probing at or above W, remaining 0 settles the curve at the rate in use."""
    probing = attrs.evolve(cubic(w_max=100.0), rate=rate)
    plateau = decide(probing, EXHAUSTED, now=30.0).control
    assert (plateau.w_max, plateau.rate, plateau.hinted) == (rate, rate, True)
    assert plateau.t_fail == 30.0 - plateau.k


@pytest.mark.parametrize(("scale", "doubled"), [(1.0, 40.0), (2.0, 20.0 * 2**0.5)])
def test_a_slow_start_alone_doubles_at_full_speed(scale: float, doubled: float) -> None:
    """Alone, a slow start doubles every SLOW_START_DOUBLING; shared, half as fast."""
    control = Control(rate=20.0, phase="slow")
    busy = Observation(status=200, backlogged=True, scale=scale)
    grown = decide(control, busy, now=SLOW_START_DOUBLING).control
    assert grown.rate == pytest.approx(doubled)


def test_a_strike_run_probes_at_the_floor_spread_by_the_jitter() -> None:
    """A run of 429s after a strike probes every PROBE_FLOOR, times the jitter drawn."""
    told = initial(100.0, adaptive=True, now=0.0)
    at_limit = Observation(status=429, answered=81, admitted=80)
    control = decide(told, at_limit, now=0.81, ceiling=100.0).control
    run = decide(control, Observation(status=429, streak=2), now=0.82, ceiling=100.0, jitter=0.5)
    assert run.pause == pytest.approx(PROBE_FLOOR * 0.5)


@pytest.mark.parametrize(("admitted", "k"), [(60, UNSURE_K), (100, CUBIC_K)])
def test_a_w_held_at_half_the_rate_in_use_is_probed_sooner(admitted: int, k: float) -> None:
    """An epoch that admitted under MAX_CUT of the rate in use: W is held there, K halves.

    Such a measure is a sliding log's memory of a slow start, or a server without a burst
    refusing the jitter, more often than the limit: levelled off at half a sliding log's
    limit of 1,000/s with the usual K, the curve took the rest of an 8-s run to climb back.
    """
    observation = Observation(status=429, epoch_age=2.0, answered=110, admitted=admitted)
    left = decide(cubic(w_max=100.0), observation).control  # at 90/s: 30 or 50/s measured
    assert left.w_max == pytest.approx(max(admitted / 2.0, 90.0 * MAX_CUT))
    assert left.k_base == left.k == pytest.approx(k)


def test_w_is_at_most_what_was_sent_when_the_rate_was_not_all_used() -> None:
    """Not backlogged, sending 70/s of a rate of 90: the overload was at 70/s, not more."""
    observation = Observation(
        status=429, epoch_age=2.0, answered=170, admitted=160, sent=70.0, backlogged=False
    )
    left = decide(cubic(w_max=100.0), observation).control  # admitted 80/s over the epoch
    assert left.w_max == pytest.approx(70.0)
    assert left.rate == pytest.approx(70.0 * BETA)


def test_a_slow_start_that_saw_nothing_admitted_lately_cuts_the_rate_in_use() -> None:
    """No admitted rate to go by: FIRST_BETA of the rate in use, not a collapse to MIN_RATE."""
    refused = Observation(status=429, backlogged=True, answered=10, admitted=0)
    left = decide(Control(rate=100.0, phase="slow"), refused).control
    assert left.rate == pytest.approx(100.0 * FIRST_BETA)


def test_a_backlogged_slow_start_failed_at_its_rate_whatever_the_send_meter_says() -> None:
    """Backlogged, the rate was all used: the curve climbs back toward it (the meter lags)."""
    refused = Observation(
        status=429, backlogged=True, admitted_rate=150.0, answered=40, admitted=39, sent=100.0
    )
    left = decide(Control(rate=200.0, phase="slow"), refused).control
    assert left.w_max == 200.0


def test_a_fleet_of_two_measures_w_over_the_epoch_for_both() -> None:
    """Shared by two, this process's 100 admitted in 2 s stand for 100/s; K is doubled."""
    control = attrs.evolve(cubic(w_max=200.0), rate=150.0)
    fleet = Observation(
        status=429, epoch_age=2.0, answered=100, admitted=100, scale=2.0, backlogged=True
    )
    left = decide(control, fleet).control
    assert left.w_max == pytest.approx(100.0)
    assert left.k_base == 2 * CUBIC_K


def test_a_fleet_of_two_leaving_the_slow_start_takes_the_lower_measure() -> None:
    """Shared by two: W is the lower of the admitted rate x 2 and the fleet's sent x share."""
    fleet = Observation(
        status=429,
        backlogged=True,
        admitted_rate=50.0,  # x 2: 100/s
        answered=20,
        admitted=15,
        sent=80.0,  # x 15/20: 60/s
        scale=2.0,
    )
    left = decide(Control(rate=200.0, phase="slow"), fleet).control
    assert left.rate == pytest.approx(200.0 * MAX_CUT * FIRST_BETA)  # no lower than that
    assert left.w_max == pytest.approx(70.0)  # levels off at the new rate, over 60


def test_a_fleet_s_last_second_counts_for_every_process() -> None:
    """Shared by two, this process's 40 admitted over the last second stand for 80/s."""
    control = attrs.evolve(cubic(w_max=200.0), rate=150.0)
    fleet = Observation(
        status=429,
        epoch_age=2.0,
        answered=20,
        admitted=20,  # 20/s over the epoch, for both
        admitted_second=40.0,
        scale=2.0,
        backlogged=True,
    )
    assert decide(control, fleet).control.w_max == pytest.approx(80.0)


def test_a_fleet_s_window_quota_counts_for_every_process() -> None:
    """Out of its quota, a window shared by two is aimed at twice what this process saw."""
    exited = Control(rate=150.0, phase="cubic", w_max=200.0, t_fail=9.9, k=2.0, epoch=1)
    refused = Observation(
        status=429,
        epoch_age=0.1,
        answered=10,
        admitted=5,
        admitted_second=30.0,
        scale=2.0,
        streak=3,
        refused_for=0.3,
    )
    aimed = decide(exited, refused).control
    assert (aimed.w_max, aimed.rate, aimed.epoch) == (60.0, 60.0, 1)


def test_a_fleet_s_last_second_counts_every_process_s_answers() -> None:
    """In a young epoch, what the last second admitted counts for the fleet (``scale``).

    Four processes: this one saw 30 admitted over the last second, so the fleet's
    server admitted 120, and the decrease finds W = 120. Counted for one process (30),
    the overload looked like a window's memory, and the curve aimed back at 144/s.
    """
    control = attrs.evolve(cubic(w_max=160.0), epoch=2)
    overload = Observation(
        status=429, scale=4.0, epoch_age=0.6, answered=11, admitted=10, admitted_second=30.0
    )
    decided = decide(control, overload, now=0.6).control
    assert decided.w_max == pytest.approx(120.0)
    assert decided.rate == pytest.approx(120.0 * BETA)


def test_a_bare_429_s_pause_is_one_interval_of_the_limit_the_server_named() -> None:
    """An echo 429 over a limit the server names: the pause is an interval of that limit.

    The rate is first brought down to the named limit, and the pause follows it: one
    interval at 90/s (11 ms) would send the next request into the same refusal.
    """
    echo = Observation(status=429, fresh=False, hint=30.0)
    decision = decide(cubic(w_max=100.0), echo, now=0.0)
    named = 30.0 * PACING
    assert decision.control.rate == pytest.approx(named)
    assert decision.pause == pytest.approx(1 / named)


@pytest.mark.parametrize(
    ("epoch_age", "w_max", "rate"), [(1.2, 1300.0, 1300.0 * BETA), (0.8, 2900.0, 1450.0 * BETA)]
)
def test_the_climb_out_of_a_slow_start_is_no_floor_for_w_after_a_second(
    epoch_age: float, w_max: float, rate: float
) -> None:
    """A second into the climb toward the rate that failed, W is what the epoch measured.

    The climb aims at an upper bound and overshot a fixed window of 1,000/s to 2,900/s:
    W held at half of that was over the limit. Younger, a measure of 1,300/s may be a
    sliding log's memory of the slow start: the curve climbs back to the rate in use
    (``test_a_measure_under_half_the_rate_just_out_of_the_slow_start_is_memory``).
    """
    climbing = Control(rate=2900.0, phase="cubic", w_max=4200.0, k=4.0, epoch=1)
    observation = Observation(
        status=429, epoch_age=epoch_age, answered=2000, admitted=round(1300 * epoch_age)
    )
    left = decide(climbing, observation).control
    assert left.w_max == pytest.approx(w_max)
    assert left.rate == pytest.approx(rate)


@pytest.mark.parametrize(
    ("epoch", "epoch_age", "k", "left_slow"),
    [
        (1, 0.5, UNSURE_K, 0.0),
        (1, 1.2, CUBIC_K, 0.0),
        (2, 0.5, CUBIC_K, 0.0),
        (2, 0.2, UNSURE_K, 10.0 - 0.48),
        (2, 0.5, CUBIC_K, 10.0 - 1.2),
    ],
)
def test_a_measure_within_a_second_of_the_slow_start_is_probed_sooner(
    epoch: int, epoch_age: float, k: float, left_slow: float
) -> None:
    """Within a second of leaving the slow start, W comes back, and is probed, in UNSURE_K.

    Such a measure may be a sliding log's memory of the slow start (it admits as the
    entries of a second ago leave): 0.55 of the rate in use for a limit of 1,000/s, and
    with the usual K the curve stayed under it until the end of an 8-s row. Later, and
    from the next epoch on (whose W was measured, and the curve probes past it), K is the
    usual one; unless that epoch too is within a busy second of the slow start: a
    sliding-window counter of 1,000/s refused the climb at 0.79 R, then 0.2 s later at
    0.75 R, and that measure, probed at the usual K, held the rate there.
    """
    w_max = 3000.0 if epoch == 1 else 1100.0
    control = Control(
        rate=1200.0, phase="cubic", w_max=w_max, k=4.0, epoch=epoch, left_slow=left_slow
    )
    observation = Observation(
        status=429, epoch_age=epoch_age, answered=2000, admitted=round(1000 * epoch_age)
    )
    left = decide(control, observation).control
    assert left.w_max == pytest.approx(1000.0)
    assert left.k_base == left.k == pytest.approx(k)


@pytest.mark.parametrize(
    ("epoch", "last_w", "w_max"), [(1, 3080.0, 1156.0), (2, 1100.0, 1156.0), (2, 740.0, 578.0)]
)
def test_a_measure_under_half_the_rate_just_out_of_the_slow_start_is_memory(
    epoch: int, last_w: float, w_max: float
) -> None:
    """Within a second of the slow start, a measure under MAX_CUT: the curve climbs back.

    A sliding log of 1,000/s, 0.26 s after the slow start, admitted 0.45 of the 1,156/s
    in use: it still held the slow start's entries. W held at half the rate (578) sat
    under the limit for 3 s of an 8-s row. As for any window's memory, the rate drops and
    the curve climbs back to the rate in use. After a later decrease, so it does when the
    measure is under MEMORY_W_SHARE of the last W; the floor holds when it is not.
    """
    control = Control(rate=1156.0, phase="cubic", w_max=last_w, k=4.0, epoch=epoch)
    observation = Observation(status=429, epoch_age=0.26, answered=2000, admitted=135)
    left = decide(control, observation).control
    assert left.w_max == pytest.approx(w_max)
    assert left.rate == pytest.approx(578.0 * BETA)


@pytest.mark.parametrize(
    ("last_w", "epoch_age", "admitted", "w_max"),
    [(127.0, 0.35, 22, 75.0), (127.0, 1.2, 75, 62.5), (85.0, 0.35, 22, 22 / 0.35)],
    ids=["young, far under the last W", "a second old", "near the last W"],
)
def test_a_young_measure_far_under_the_last_w_is_a_window_s_memory(
    last_w: float, epoch_age: float, admitted: int, w_max: float
) -> None:
    """Past the first climb, a young epoch's measure under MEMORY_W_SHARE of the last W.

    A sliding-window counter weighs the last window's count into this one's. After an
    overload at 127/s it refused at 75/s, 0.35 s into the next epoch, having admitted
    63/s; taken for W, that held a client at 0.6 R for the rest of an 8-s row (loopback,
    100/s). The rate drops as for any decrease, but the curve climbs back to the rate in
    use. A second into the epoch, or near the last W, the measure is W.
    """
    measure = 22 / 0.35  # the young epoch's 63/s
    assert MEMORY_W_SHARE * 85.0 <= measure < MEMORY_W_SHARE * 127.0
    control = Control(rate=75.0, phase="cubic", w_max=last_w, k=CUBIC_K, epoch=2)
    overload = Observation(
        status=429, epoch_age=epoch_age, answered=admitted + 3, admitted=admitted
    )
    left = decide(control, overload).control
    assert left.w_max == pytest.approx(w_max)
    assert left.rate == pytest.approx(min(w_max, admitted / epoch_age) * BETA)
    assert left.epoch == 3


def test_a_told_limits_second_strike_within_a_second_probes_at_the_usual_k() -> None:
    """A strike is not a slow start: the second, within a second of it, takes CUBIC_K."""
    struck = Control(rate=99.0, phase="paced", w_max=99.0, t_fail=9.5, stamp=9.5, epoch=1)
    observation = Observation(status=429, epoch_age=0.5, answered=40, admitted=39)
    left = decide(struck, observation, ceiling=100.0).control
    assert left.phase == "cubic"
    assert left.k_base == CUBIC_K


@pytest.mark.parametrize("jitter", [0.6, 1.0, 1.4])
def test_an_echo_in_a_young_first_epoch_pauses_no_longer_than_the_floor(jitter: float) -> None:
    """A 429 with no run timed gets PROBE_FLOOR, however many 429s the epoch counts.

    A sliding-window counter of 1,000/s refused the climb out of the slow start: the young
    first epoch counted 30 429s into its run, then a probe was admitted (the run ended)
    and a request granted before it came back a 429. Doubled 30 times and not capped by
    a run's length (none was timed), its pause was BACKOFF_MAX spread to 2.7 s, and the
    client stood still long after the counter admitted again (0.67 R over the 8-s run).
    """
    exited = Control(rate=854.5, phase="cubic", w_max=2691.9, t_fail=9.95, k=1.0, epoch=1)
    echo = Observation(status=429, epoch_age=0.05, answered=40, admitted=10, streak=0)
    assert decide(exited, echo, jitter=jitter).pause == pytest.approx(PROBE_FLOOR * jitter)


@pytest.mark.parametrize(
    ("left_slow_ago", "admitted", "k"),
    [(1.05, 17, UNSURE_K), (COUNTER_MEMORY + 0.5, 17, CUBIC_K), (1.05, 24, CUBIC_K)],
    ids=["far under, 1 s after the slow start", "2.5 s after", "near the rate in use"],
)
def test_a_measure_far_under_the_rate_two_seconds_from_the_slow_start_is_probed_sooner(
    left_slow_ago: float, admitted: int, k: float
) -> None:
    """Within COUNTER_MEMORY of the slow start, a measure under MEMORY_W_SHARE: UNSURE_K.

    A sliding-window counter of 25/s remembers the slow start's overload for two windows:
    1.03 s after it, it refused 27/s having admitted 17/s. W is that measure (it may be
    the limit), but taken at CUBIC_K the curve sat under 0.9 R for the rest of an 8-s run.
    Later, or near the rate in use, a measure is probed at the usual K.
    """
    assert admitted < MEMORY_W_SHARE * 27.0 or k == CUBIC_K
    now = 10.0
    control = Control(
        rate=27.0,
        phase="cubic",
        w_max=27.0,
        t_fail=now - 1.0,
        k=CUBIC_K,
        stamp=now - 1.0,
        epoch=2,
        left_slow=now - left_slow_ago,
    )
    refused = Observation(status=429, epoch_age=1.0, answered=admitted + 2, admitted=admitted)
    left = decide(control, refused, now=now).control
    assert left.w_max == pytest.approx(admitted)
    assert left.k == pytest.approx(k)


@pytest.mark.parametrize(
    ("epoch", "streak", "pause"),
    [(1, 2, PROBE_FLOOR), (1, 1, 1 / 97.9), (2, 2, 2 / 97.9)],
    ids=["second 429 just out of the slow start", "the first", "past the first climb"],
)
def test_a_second_429_just_out_of_the_slow_start_pauses_at_least_the_floor(
    epoch: int, streak: int, pause: float
) -> None:
    """Young in the first climb, a second 429 pauses PROBE_FLOOR, not two intervals.

    A fixed window of 100/s spent its quota on the slow start 0.43 s before its end and
    refused everything until then. Doubling from one interval (10 ms) met it six times
    over that run, five in its first 0.1 s. Its first 429, and a run after the first
    climb (a probe's, a limit found), double from one interval as before.
    """
    control = Control(rate=97.9, phase="cubic", w_max=331.4, t_fail=9.99, k=1.0, epoch=epoch)
    refused = Observation(
        status=429,
        fresh=False,
        epoch_age=0.05,
        answered=streak,
        streak=streak,
        refused_for=0.01 * (streak - 1),
    )
    assert decide(control, refused).pause == pytest.approx(pause)
