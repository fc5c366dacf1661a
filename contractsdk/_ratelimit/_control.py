"""The learning policy, pure: ``step(control, observation, now) -> Decision``.

No I/O, no event loop, no clock of its own: the limiter feeds it what one answer said and
the bucket's *busy time* (seconds during which the bucket had requests waiting or in
flight; idle time never enters it, so a client that wakes up after a quiet spell neither
finds a rate that grew while nobody used it nor measures a rate diluted by the silence).
The same functions drive a client alone and a fleet of processes that share one state
through Redis: the state is a handful of numbers that serialise as they are.

What it decides, per bucket:

* **Rate, known limit.** A configured (or declared) limit is paced at ``PACING`` (99 %)
  of itself. A 429 still lowers it, as below: the real limit may be lower (another
  process without shared state, a changed plan); it climbs back, never above.
* **Rate, unknown limit.** A *slow start* at ``SLOW_START_RATE`` doubles every
  ``SLOW_START_DOUBLING`` busy seconds while the bucket is backlogged, and never past
  three times what is sent (a client that does not use its rate never raises it). When the
  server's headers name a limit (``X-RateLimit-Limit``, read per the longest reset seen
  lately, at least a second), the slow start jumps straight to it.
* **At a known limit, two strikes.** A first fresh 429 while the rate is at its known
  ceiling only pauses (and starts a new epoch, so its echoes are not fresh): the network
  and the event loop bunch requests up, and a server paced to the millisecond refuses one
  now and then. A second within ``STRIKE_WINDOW`` busy seconds means the limit is lower
  than the client was told, and decreases as below; but not a 429 in the same run as the
  first (no success between) when the strike's epoch had admitted ``RUN_AFTER`` seconds
  of the told rate: one refusal that lasts, as a window refuses until a told burst's
  entries leave it. The strike then lasts until the pause after the run's last
  429 ends, and a limit really lower refuses again within ``STRIKE_WINDOW`` of that.
* **Decrease.** A *fresh* 429 (its request was granted after the last decrease, so it is
  not an echo of the same overload: TCP cuts once per round trip) lowers the rate to
  ``beta * W``, W being the rate that overloaded the server. Under a steady overload every
  kind of server (token bucket, GCRA, fixed or sliding window) admits exactly its limit,
  so once an epoch (the time since the last decrease) is old enough to measure, W is the
  rate of admitted answers over it (or over the last busy second, if higher: a rate that
  only just crossed the limit; a whole second, as a fixed window admits its quota at
  once). Leaving the slow start, W is what the server admitted lately (the rate in use
  overshot it by as much as the server's burst hid; shared, this process's admitted rate
  times the processes; the rate in use if it was refused within its first
  ``MIN_ANSWERS`` answers, too few to measure by), cut by ``FIRST_BETA``. Later cuts keep
  at least ``MAX_CUT`` of the rate in use; a measure under that is more often a window's
  memory or a server without a burst refusing the jitter than the limit, and the curve
  comes back to that W, and probes past it, in ``UNSURE_K`` instead of ``CUBIC_K``, as
  it does after any measure within a busy second of leaving the slow start, in the first
  climb or after it (a sliding log or a sliding-window counter still remembers it then;
  in the first climb a measure under ``MAX_CUT`` is taken for that memory, below), and
  after a measure under ``MEMORY_W_SHARE`` of the rate in use within ``COUNTER_MEMORY``
  busy seconds of it (a counter remembers for two windows). Not a
  second or more into the climb out of a slow start: that climb aims at the rate that
  failed, an upper bound only, and may overshoot the limit many times over.
* **A window's memory.** An epoch younger than a second that admitted less than
  ``ECHO_SHARE`` of what it sent is a window still remembering the last overload (a
  sliding log admits only as its entries of a second ago expire), and so is a 429 for a
  rate under what the server admitted over the last busy second: the rate drops, but the
  curve climbs back to the rate in use, or to that second's rate (up to the last W),
  instead of taking that measure for W. Once two decreases and a busy second since the
  slow start have passed (no slow start's burst left in that second), it counts toward W
  in such a young epoch too. Within a second of leaving the slow start, a measure under
  ``MAX_CUT`` of the rate in use is such a memory too: a sliding log still holds the slow
  start's entries. Past that first climb, so is a measure under ``MEMORY_W_SHARE`` of the
  last W: a sliding-window counter weighs the last window's count into this one's, and
  refuses a rate well under its limit for up to a window after an overload.
* **The same overload.** A fresh 429 in an epoch too young to measure (``MIN_EPOCH`` busy
  seconds, ``MIN_ANSWERS`` answers) is the overload the last decrease answered, still
  draining (a fixed window refuses everything until it ends): it does not lower the rate
  again, it doubles the pause (``streak``), and until the epoch can measure the rate
  does not climb either. Only at a told limit, where a first 429 was
  forgiven, a second lowers it at once (by ``YOUNG_BETA`` if the epoch is young).
* **A window out of its quota.** Out of the slow start the curve climbs toward the rate
  that failed, an upper bound only. A run of bare 429s that lasts ``QUOTA_RUN`` seconds
  (``QUOTA_STREAK`` in a row) is a window refusing everything until it moves: what it
  admitted over the last second is its quota, and the curve aims there instead (from no
  higher), without a decrease.
* **Climb.** CUBIC in relative form, ``W * (1 + c * (t - K)**3)``: fast while far below W,
  flat around it, then probing above in case the limit rose. K is a few busy seconds
  whatever the rate, so 25/s and 1,000/s converge alike, and doubles (to ``K_MAX``, or at
  a low rate to ``PROBE_SPACING`` requests' worth, each 429 counted with the requests its
  ``Retry-After`` stands still for) each time a decrease finds W where the last one did: a
  limit found again and again is probed, and overrun, less and less often.
  Such a decrease cuts by ``SAME_BETA`` only: the limit is known, and a step under it
  lets the server recover.
* **A limit the server names is a ceiling for the learning.** ``X-RateLimit-Limit`` (or
  its IETF forms) over the longest reset seen lately (``RateLimiter._reset_seen``), at
  least a second, is where a slow start jumps, the most W can be, and the most the rate
  climbs to: probing past the quota of a window finds only 429s and a pause until the
  window ends.
* **Remaining 0 is a hint, not a collapse.** A success that says the server's counter ran
  out means its bucket is empty now, not that the rate is wrong (a server with a burst of
  1 says it after every request). It empties the client's bucket (no burst into an empty
  server) and, once per epoch, stops a slow start or a probe at the rate in use (a slow
  start under a limit the same headers name jumps there instead); it never lowers the
  rate, nor holds back a curve climbing back to W.
* **Pauses.** A 429 (or 5xx) with ``Retry-After`` pauses the bucket that long (on a 429
  whose counter is empty, until its reset if ``Retry-After`` is that reset rounded up to
  whole seconds); a 429 that says the counter is empty pauses until its reset; a bare
  429 pauses for one interval of the (lowered) rate, doubled for each 429 in a row (each
  for a request granted after the one before was answered; just out of the slow start,
  for each 429 of the epoch while it is too young to measure, and from the second of
  those, at least ``PROBE_FLOOR``: the server still remembers the slow start's overload,
  a fixed window until it ends), up to ``BACKOFF_MAX`` and
  to ``REFUSAL_SHARE`` of how long the run of 429s has lasted (at least ``PROBE_FLOOR``:
  a probe for the end of a refusal, not a wait past it), and spread by ``jitter`` (the
  limiter draws it from [0.5, 1.5): processes that share a key but not their state,
  refused together, would otherwise come back together, 2 s later each time, and be
  refused together again). Every pause is cut to ``max_pause``: no answer, however
  absurd (``Retry-After: 1e9``, a date in 9999, a reset a year away), stalls the client
  longer.

Invariants (each tested in ``tests/test_ratelimit_control.py``):

1. ``MIN_RATE <= rate <= ceiling * PACING`` whenever a rate is set and learning applies
   (a ceiling under ``MIN_RATE`` wins); ``rate is None`` only for an unknown limit that
   does not adapt.
2. Only a fresh 429 lowers the rate, and it bumps ``epoch``; echoes change nothing but the
   pause.
3. ``0 <= pause <= max_pause``.
4. The functions are total: any observation gives a decision, never an exception.
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from ._observation import Observation

__all__ = [
    "BETA",
    "CUBIC_K",
    "FIRST_BETA",
    "MIN_RATE",
    "PACING",
    "PROBE_FLOOR",
    "REFUSAL_SHARE",
    "SLOW_START_DOUBLING",
    "SLOW_START_RATE",
    "Control",
    "Decision",
    "Observation",
    "initial",
    "step",
]

#: The longest pause a run of bare 429s backs off to.
BACKOFF_MAX: Final = 2.0
#: In a run of bare 429s, a pause lasts no longer than this share of the time the run has
#: lasted so far, nor is cut below ``PROBE_FLOOR`` seconds by it. A fixed window refuses
#: everything until it ends; doubling alone (spread by the jitter, and sometimes two 429s
#: a round) reached a 2 s pause for a window of 1 s, and its client stood still for 2 s.
REFUSAL_SHARE: Final = 0.5
PROBE_FLOOR: Final = 0.1
#: The fraction of a known limit the bucket is paced at: requests reach the server no
#: earlier than they leave, so pacing under R leaves its bucket a margin growing by 1 % of R
#: per second against timing noise.
PACING: Final = 0.99
#: The multiplicative decrease: near a limit measured over a whole epoch; leaving the slow
#: start (what the server admitted lately includes some of its burst); and for a second
#: strike at a told limit in an epoch too young to measure.
BETA: Final = 0.9
FIRST_BETA: Final = 0.7
YOUNG_BETA: Final = 0.8
#: The decrease when a 429 finds W where the last one did: the limit is known, and a
#: step under it is enough for the server to recover.
SAME_BETA: Final = 0.95
#: Busy seconds CUBIC takes to climb back to W after a decrease by BETA; it doubles, up to
#: K_MAX, each time a decrease finds W within SAME_W of where the last one did, so a
#: limit found again and again is probed (and overrun) less and less often.
CUBIC_K: Final = 2.0
#: K after a decrease whose measure fell under ``MAX_CUT`` of the rate in use (W held there),
#: or that measured within a second of leaving the slow start (within ``COUNTER_MEMORY``,
#: under ``MEMORY_W_SHARE`` of the rate in use).
UNSURE_K: Final = 1.0
K_MAX: Final = 8.0
SAME_W: Final = 0.05
#: A probe past a known limit costs a 429 or two whatever the rate, so at a low rate K
#: doubles on, past K_MAX, up to this many requests' worth of busy seconds at W: at 25/s,
#: 16 s (a 429 in some 600 requests, not 300); from 50/s up, K_MAX. Never past K_LONGEST:
#: a limit raised at 1/s is still found within a few minutes.
PROBE_SPACING: Final = 400.0
K_LONGEST: Final = 60.0

#: The lowest rate the learning ever sets (botocore's minimum fill rate).
MIN_RATE: Final = 0.5
#: Slow start for unknown limits: the first rate, and the busy seconds per doubling.
SLOW_START_RATE: Final = 20.0
SLOW_START_DOUBLING: Final = 0.3
#: A fresh 429 this soon after a decrease (busy seconds), or with fewer answers in the
#: epoch, is still the same overload: it pauses but does not lower the rate again.
MIN_EPOCH: Final = 0.2
MIN_ANSWERS: Final = 5
#: Out of the slow start, a run of bare 429s this long (seconds) and this many in a row is
#: a window that ran out of its quota: it refuses everything until it moves.
QUOTA_RUN: Final = 0.2
QUOTA_STREAK: Final = 3
#: At a known limit, a lone 429 is taken for timing noise (requests bunched up on the way
#: to the server): it pauses the bucket but lowers the rate only if another fresh 429
#: follows within this many busy seconds (the limit really is lower).
STRIKE_WINDOW: Final = 1.0
#: A run of 429s after a strike is that one strike only if the strike's epoch admitted
#: this many seconds' worth of the told rate first: a server at the told limit, whose
#: window still counts a told burst. Eight processes each told the whole limit are
#: refused after two or three successes each, and must decrease at once.
RUN_AFTER: Final = 0.5
#: One decrease never cuts W below this share of the rate in use (leaving a slow start
#: alone, W is what was admitted: the slow start overshot by as much as it clamped to).
MAX_CUT: Final = 0.5
#: A decrease in an epoch younger than ``LATELY_SPAN`` that measured less than this share
#: of the rate in use is taken for a window's memory of the last overload, not the limit.
ECHO_SHARE: Final = 0.4
#: After the first climb, such a decrease that measured less than this share of the last
#: W is a window's memory too: a sliding-window counter weighs the last window's count
#: into this one's, and for up to a window after an overload refuses a rate well under
#: its limit (at 75/s for a limit of 100, after a W of 127).
MEMORY_W_SHARE: Final = 0.7
#: The busy seconds after leaving the slow start in which a decrease measuring under
#: MEMORY_W_SHARE of the rate in use takes UNSURE_K: a sliding-window counter's memory of
#: the slow start lasts up to two windows.
COUNTER_MEMORY: Final = 2.0
#: The busy seconds the admitted-rate meter spans at most (two bins of the store's meter).
LATELY_SPAN: Final = 1.0
#: A slow start never takes the rate past this multiple of the measured send rate.
SLOW_START_CLAMP: Final = 3.0
#: The most W is scaled up for a schedule that granted less than its rate over a busy
#: second, its pauses left out (and the most a learnt rate's schedule is sped up for
#: what a late event loop loses); and the most of that second taken for paused.
MAX_SHORTFALL: Final = 1.15
MOST_PAUSED: Final = 0.9
#: The most doublings one step of a slow start takes (2**60: no limit is that far).
MOST_DOUBLINGS: Final = 60.0
#: Increases never take the rate past this multiple of the measured send rate (botocore).
SEND_RATE_CLAMP: Final = 2.0

Phase = Literal["off", "paced", "slow", "cubic"]


@attrs.frozen
class Control:
    """The learning state of one bucket.

    Attributes:
        rate: Requests per second it paces at; None: it does not pace.
        phase: ``"off"`` (no pacing), ``"paced"`` (at a known ceiling, nothing learnt),
            ``"slow"`` (slow start) or ``"cubic"`` (after a decrease).
        w_max: CUBIC's W: the rate that last overloaded the server.
        t_fail: The busy time of the last decrease (or the hint that set W).
        k: Busy seconds from ``t_fail`` until the curve is back at W.
        k_base: The K a decrease by ``BETA`` would take: it doubles, up to ``K_MAX``, each
            time a decrease finds W where the last one did.
        stamp: The busy time the rate was last grown at (slow start is incremental).
        epoch: Decreases so far; a 429 is fresh when its request was granted at this epoch.
        hinted: A remaining-0 hint has already set W in this epoch.
        strike_run: At a strike whose epoch admitted ``RUN_AFTER`` seconds of the told
            rate (a fleet's count: this process's times ``scale``): 429s in a row after it
            are that strike, not a second.
        left_slow: The busy time the slow start was left at (0.0: it has not been).
    """

    rate: float | None
    phase: Phase
    w_max: float = 0.0
    t_fail: float = 0.0
    k: float = 0.0
    stamp: float = 0.0
    epoch: int = 0
    hinted: bool = False
    strike_run: bool = False
    k_base: float = CUBIC_K
    left_slow: float = 0.0


@attrs.frozen
class Decision:
    """What the limiter does after an observation.

    Attributes:
        control: The new learning state.
        pause: Seconds to pause the bucket for (0.0: no pause).
        tokens: The most requests the bucket may hold now (None: unchanged): the server's
            remaining count, so the client never bursts past what the server has left.
    """

    control: Control
    pause: float = 0.0
    tokens: float | None = None


def initial(ceiling: float | None, *, adaptive: bool, now: float) -> Control:
    """Return the state a bucket starts in, or goes back to when its limits change."""
    if ceiling is not None:
        return Control(rate=ceiling * PACING, phase="paced", stamp=now)
    if not adaptive:
        return Control(rate=None, phase="off", stamp=now)
    return Control(rate=SLOW_START_RATE, phase="slow", stamp=now)


def _clamp(rate: float, ceiling: float | None) -> float:
    rate = max(MIN_RATE, rate)
    return rate if ceiling is None else min(rate, ceiling * PACING)


def said_pause(observation: Observation, *, max_pause: float, paced: bool = True) -> float | None:
    """Return how long the server asked the bucket to pause, cut to ``max_pause``, if it did.

    ``Retry-After`` on a 429 or a 5xx (on a 429, the finer reset it rounds up, if any:
    ``RateLimitHints.wait``); on a 429, the reset of a counter that says it is empty. A
    success that says the counter is empty pauses nothing: its request went
    through, and a token-bucket server refills long before its rounded-up reset; unless
    the bucket does not pace (``paced`` False), when the reset is all there is to go by.
    """
    hints = observation.hints
    status = observation.status
    # A Retry-After of 0 (or a date already past) names no pause: a 429 with it is bare.
    if hints.retry_after and (status == 429 or status >= 500):
        wait = hints.wait if status == 429 else hints.retry_after
        assert wait is not None
        return min(wait, max_pause)
    if (status == 429 or not paced) and observation.exhausted and hints.reset is not None:
        return min(hints.reset, max_pause)
    return None


def _measured_w(
    rate: float,
    observation: Observation,
    remembered: float,
    last_w: float,
    *,
    pace: float,
) -> float:
    """The rate that overloaded the server (the rate in use, when too young to tell).

    Leaving a slow start: what the server admitted lately. Later, from this epoch's
    answers: under steady overload every server type admits its limit, whatever it
    refuses, so W is the rate of admitted answers over the epoch, or lately if that is
    higher (a rate that only just crossed the limit after a long clean climb). Not the
    rate in use times the share admitted: a server's burst hides an overshoot for as long
    as it lasts, and a window refuses all its 429s at its end. ``remembered`` is what
    counts of the last busy second in an epoch younger than one; ``last_w`` is the W the
    last decrease found; ``pace`` what the schedule asked for over the last busy second
    (:func:`_paced_lately`, no more than ``rate``).
    """
    if observation.phase_slow and _few_answers(observation):
        # Refused within its first few answers (a server without a burst, or another
        # process that spent the quota): too few to measure a rate by, what was sent
        # included (one admitted in half a second read as 2/s against a limit of 12, and
        # the pause after it lasted 0.8 s; one request sent and refused set W to 2/s, and
        # a burst of 50 an idle spell later took 10 s).
        return rate
    if 0 < observation.sent < rate and not observation.backlogged:
        rate = observation.sent  # the rate was not all used: W is what was sent
    fleet = _fleet_admitted(observation)
    if observation.phase_slow:
        # This process's admitted rate lately, times the processes sharing the bucket:
        # the fleet's send rate times the share admitted over the epoch counts the whole
        # slow start's successes, and a doubling rate's 429s only at its very end.
        admitted = observation.admitted_rate * observation.scale
        if fleet > 0:
            admitted = min(admitted, fleet)
        return min(rate, admitted) if admitted > 0 else rate
    if _young(observation) or observation.answered < MIN_ANSWERS:
        # Too young to measure, or too few answers here to stand for a fleet's (one of
        # eight processes saw one of two admitted: W = 62 for a limit of 100): a plain
        # multiplicative decrease.
        return rate
    # Over the epoch, and lately (the end of a climb that only just crossed the limit).
    age = observation.epoch_age
    over_epoch = observation.admitted * observation.scale / age
    # `lately` spans the last busy second. Not less than a second: a fixed window admits
    # its whole quota at once, which over half a second reads as twice its limit. In a
    # younger epoch it counts the last one's answers too: only as far as `remembered`.
    lately = observation.admitted_second * observation.scale
    if age < LATELY_SPAN:
        lately = min(lately, remembered)
    measured = max(over_epoch, lately, fleet)
    # What was sent per busy second the schedule was not paused: a pause stands it still.
    sent = observation.sent / (1 - min(observation.paused, MOST_PAUSED))
    if observation.backlogged and 0 < sent < pace:
        # The pacing fell short of its own rate: timers fire late on a busy event loop,
        # and with no known burst a late slot is not caught up (8 % at 1,000/s). What the
        # server admitted was sent at `pace`, in the schedule's terms; a rate still
        # climbing is ahead of what it sent over the second, and only half that climb
        # counts (`_paced_lately`). The time paused after 429s is left out: counted, it
        # read as a slow pacer, and scaling up what a window admitted put W 15 % over its
        # limit. It makes up a shortfall under what the server has shown it admits (the
        # last W), never a new high: after a long climb from under the limit, the last
        # second also holds what the server's bucket had refilled, and scaled up it put
        # W at 31/s for a token bucket of 25/s.
        scaled = measured * min(pace / sent, MAX_SHORTFALL)
        measured = max(measured, min(scaled, last_w))
    measured = min(rate, measured)
    if observation.hint is not None:
        # The server named its limit: a pause after each 429 lets its bucket refill, and
        # the refill hides how far above it the rate was.
        measured = min(measured, observation.hint)
    return measured


def _fleet_admitted(observation: Observation) -> float:
    """Shared: the fleet's send rate lately times the share this process saw admitted.

    0.0 alone, or with nothing to go by. One process's own answers, scaled by the number
    of live clients, stand for the fleet only as well as its share of the traffic is a
    K-th: eight processes measured W from 62 to 139/s for a limit of 100. The fleet's
    send rate is counted in Redis.
    """
    if observation.scale <= 1 or observation.sent <= 0 or observation.answered <= 0:
        return 0.0
    return observation.sent * observation.admitted / observation.answered


def _few_answers(observation: Observation) -> bool:
    """Too few answers to measure a rate by (a fleet's count for every process)."""
    return observation.answered * observation.scale < MIN_ANSWERS


def _young(observation: Observation) -> bool:
    """The epoch is too young to measure: the overload its decrease answered still drains.

    Its answers count for every process that shares the bucket (``scale``): one of K
    sees a K-th of them.
    """
    return observation.epoch_age < MIN_EPOCH or _few_answers(observation)


def _draining(observation: Observation) -> bool:
    """The epoch is young and has seen a 429 already: hold the rate until it can measure."""
    return _young(observation) and observation.answered > observation.admitted


def _measures(observation: Observation) -> bool:
    """The epoch is old enough to measure, and admitted something to measure.

    An epoch in which every answer was a 429 (a fixed window refusing all until it ends,
    a pause the server did not name) says nothing of the rate: halving it each time
    collapsed it.
    """
    return not _young(observation) and observation.admitted > 0


def _decrease(
    control: Control,
    rate: float,
    observation: Observation,
    ceiling: float | None,
    now: float,
    cost: float,
) -> Control:
    """A fresh 429: W is what overloaded the server; the rate drops to ``beta * W``.

    ``cost``: the requests the 429 cost, itself and those its named pause stood still for.
    """
    slow = control.phase == "slow"
    young = _young(observation)
    last_second = _last_second(control, observation)
    # Within a second of leaving the slow start, the last second may hold the server's
    # burst, which the slow start drained: it measures nothing in a young epoch. (Two
    # decreases can pass in that second: against a GCRA of 25/s with a burst of 20, the
    # second and third read 41 and 30/s from it, and each cut the rate to over the limit.)
    remembered = 0.0 if _burst_lately(control, now) else last_second
    measured = _measured_w(
        rate,
        attrs.evolve(observation, phase_slow=slow),
        remembered,
        control.w_max,
        pace=_paced_lately(control, rate, now),
    )
    if slow:
        return _leave_slow_start(control, rate, max(MIN_RATE, measured), observation, ceiling, now)
    # A climb out of a slow start aims at the rate that failed, an upper bound only, and
    # may overshoot the limit many times over: half the rate in use is no floor for W.
    floor = 0.0 if _blind_climb(control, rate, observation) else rate * MAX_CUT
    w_max = max(MIN_RATE, measured, floor)
    # A window still remembering the last overload; out of the slow start, a measure
    # under the floor too (a sliding log of 1,000/s read 0.45 of the rate in use, and W
    # held at half of it sat under the limit for 3 s).
    memory = (
        not young
        and observation.epoch_age < LATELY_SPAN
        and (
            measured < rate * ECHO_SHARE
            or remembered > rate
            or (_first_climb(control) and measured < floor)
            or (_past_first_climb(control) and measured < control.w_max * MEMORY_W_SHARE)
        )
    )
    beta, k = (YOUNG_BETA if young else BETA), CUBIC_K
    if not young:
        # The same limit found again: probe for a higher one less often. (Not by a
        # window's memory, which is not taken for the limit.)
        same = control.w_max > 0 and abs(w_max - control.w_max) <= SAME_W * control.w_max
        if same and not memory:
            beta, k = SAME_BETA, min(control.k_base * 2, _k_most(w_max, cost))
        if observation.scale > 1:
            # A fleet overruns the limit by one reservation per process before a 429
            # reaches them all: probe for a higher limit half as often.
            k = max(k, min(2 * CUBIC_K, K_MAX))
    if memory:
        # An epoch younger than a second that admitted far less than it sent, or that
        # was refused at a rate under what the server admitted over the last second: a
        # window that still remembers the last overload (a sliding log admits only as
        # fast as the entries of a second ago expire, which may be a slow start's first
        # few). The rate drops as usual, but W is not that measure: the curve climbs
        # back to the rate in use, or to what the server admitted over the last second
        # if that is more, which a second later the window admits again.
        start = _clamp(w_max * beta, ceiling)
        target = max(w_max, rate, last_second)
        return _curve(control, start, target, start / target, k, now)
    if (
        measured < floor
        or _just_out_of_slow_start(control, observation, now)
        or _counter_memory(control, rate, measured, now)
    ):
        # W is held at half the rate in use (the epoch admitted less), or was measured
        # within a second of leaving the slow start (or far under the rate within two):
        # each is more often a window's memory of the slow start (or a server without a
        # burst refusing the jitter) than the limit. The curve returns to W, and probes
        # past it, twice as fast: levelled off at half a sliding log's limit of 1,000/s,
        # or at 0.52 of the rate in use, it took the rest of an 8-s run to climb back.
        k = min(k, UNSURE_K)
    return _curve(control, _clamp(w_max * beta, ceiling), w_max, beta, k, now)


def _paced_lately(control: Control, rate: float, now: float) -> float:
    """What a climbing curve's schedule asked for over the last busy second, for a shortfall.

    Midway between the rate now and the curve's mean over that second. Against the mean,
    a shortfall is the pacer's alone; against the rate now, also the climb's, which sent
    less than its latest rate over a second it spent climbing. Which is right depends on
    the server: a sliding log admits exactly its limit over the second, and scaled up by
    the climb, W read 112/s for a limit of 100 and set the rate over it; a token bucket
    refuses well past the crossing, its burst hiding it, and a climb that crossed a limit
    of 1,000/s admitted 897/s over its last second: from the mean alone, W sat 4 % low
    until the next probe (0.95-0.96 R steady at 1,000/s in the simulator, from 0.99).
    Out of a curve (a slow start, a told rate) the rate now.
    """
    if control.phase != "cubic" or now <= control.t_fail:
        return rate
    start = now - LATELY_SPAN
    since = max(start, control.t_fail)
    c = (1 - BETA) / control.k_base**3

    def integral(t: float) -> float:  # of _on_curve(control, t) over t
        return float(control.w_max * (t + c * (t - control.t_fail - control.k) ** 4 / 4))

    # Before the epoch began, the rate is taken as where the curve started.
    first = _on_curve(control, control.t_fail)
    mean = (integral(now) - integral(since) + (since - start) * first) / LATELY_SPAN
    return max(MIN_RATE, min(rate, (mean + rate) / 2))


def _on_curve(control: Control, t: float) -> float:
    """CUBIC's rate at busy time ``t``: back at W ``k`` seconds after ``t_fail``."""
    c = (1 - BETA) / control.k_base**3
    return float(control.w_max * (1 + c * (t - control.t_fail - control.k) ** 3))


def _burst_lately(control: Control, now: float) -> bool:
    """The last busy second may hold a burst the server had saved up: a slow start drained it.

    Before a second decrease (a told limit's strike is a decrease, and its first second the
    told burst's), and within a busy second of leaving the slow start.
    """
    return control.epoch < 2 or _left_slow_lately(control, now)


def _left_slow_lately(control: Control, now: float, span: float = LATELY_SPAN) -> bool:
    """Within ``span`` busy seconds (by default one) of leaving the slow start."""
    return control.left_slow > 0 and now - control.left_slow < span


def _young_first_epoch(control: Control, observation: Observation) -> bool:
    """Just out of the slow start: the first climb, its epoch too young to measure."""
    return _first_climb(control) and _young(observation)


def _first_climb(control: Control) -> bool:
    """The curve out of the slow start, before its first decrease (a strike is ``paced``)."""
    return control.phase == "cubic" and control.epoch == 1


def _past_first_climb(control: Control) -> bool:
    """A curve after a decrease that measured W: the last W is the limit, not an upper bound."""
    return control.phase == "cubic" and control.epoch >= 2


def _just_out_of_slow_start(control: Control, observation: Observation, now: float) -> bool:
    """Within a second of leaving the slow start (not of a told limit's first strike).

    In its first climb, or after later decreases within that busy second: a sliding-window
    counter remembers a slow start's overload for up to two windows, and a climb out of
    it at 1,000/s was refused at 0.79 R and again 0.2 s later at 0.75 R; the second
    measure, probed at the usual K, held the rate there (0.74-0.83 R steady over loopback).
    """
    return (_first_climb(control) and observation.epoch_age < LATELY_SPAN) or _left_slow_lately(
        control, now
    )


def _counter_memory(control: Control, rate: float, measured: float, now: float) -> bool:
    """Within COUNTER_MEMORY busy seconds of the slow start, a measure far under the rate.

    A sliding-window counter weighs the last window's count into this one's, so it
    remembers a slow start's overload for up to two windows. At 25/s it refused 27/s a
    second after the slow start, having admitted 17/s over that second: W taken from it
    at the usual K held the rate under 0.9 R for the rest of an 8-s run.
    """
    return _left_slow_lately(control, now, COUNTER_MEMORY) and measured < rate * MEMORY_W_SHARE


def _blind_climb(control: Control, rate: float, observation: Observation) -> bool:
    """A second or more into the climb out of a slow start, still under the rate that failed.

    The curve aims at that rate, not at a measure, and against a fixed window of 1,000/s
    it was at 2,400 to 2,950/s by the next 429; a measure of 1,000/s was then held at half
    of it, over the limit, and the window refused whole windows until the next decrease.
    Over a second, every server's answers say where its limit is: a sliding log no
    longer remembers the slow start, and no burst is left to hide the overload.
    """
    return (
        _first_climb(control)
        and rate < control.w_max
        and observation.epoch_age >= LATELY_SPAN
        and not _young(observation)
    )


def _last_second(control: Control, observation: Observation) -> float:
    """What the server admitted over the last busy second, up to the last W.

    Under steady overload every server admits its limit over a second; in an epoch
    younger than that, the span also holds the last epoch's answers, at the rate that
    overloaded the server then, which the last W bounds.
    """
    return min(observation.admitted_second * observation.scale, control.w_max)


def _k_most(w_max: float, cost: float) -> float:
    """The most K doubles to for a limit found again at ``w_max``: probes spaced by requests."""
    return max(K_MAX, min(PROBE_SPACING * cost / w_max, K_LONGEST))


def _k(k_base: float, start: float) -> float:
    """Busy seconds back to W from ``start`` (a share of it): ``k_base`` from BETA."""
    return float(k_base * ((1 - start) / (1 - BETA)) ** (1 / 3))


def _curve(
    control: Control, rate: float, w_max: float, start: float, k_base: float, now: float
) -> Control:
    """A new epoch's CUBIC curve toward ``w_max``, from ``start`` (a share of it) at ``now``."""
    return Control(
        rate=rate,
        phase="cubic",
        w_max=w_max,
        t_fail=now,
        k=_k(k_base, start),
        k_base=k_base,
        stamp=now,
        epoch=control.epoch + 1,
        left_slow=control.left_slow,
    )


def _leave_slow_start(
    control: Control,
    rate: float,
    measured: float,
    observation: Observation,
    ceiling: float | None,
    now: float,
) -> Control:
    """The first 429 of a slow start: down to ``FIRST_BETA`` of what was admitted.

    How far the slow start overshot is unknown (the server's burst hid it while it lasted,
    and what it admitted lately lags a rate that doubles), so the limit lies anywhere
    between the new rate and the rate that failed. The curve climbs back toward the rate
    that failed, fast at first, until a 429 in an epoch old enough to measure finds W.
    """
    failed = rate
    if 0 < observation.sent < rate and not observation.backlogged and not _few_answers(observation):
        failed = observation.sent
    if observation.scale <= 1:
        new = _clamp(measured * FIRST_BETA, ceiling)
        w_max = max(failed, measured, new)
    else:
        # Shared by a fleet, each process measures a K-th of the answers, and the climb
        # outruns the measurements: the rate drops no lower than FIRST_BETA of MAX_CUT of
        # the rate that failed (one process's measure may be far off), and the curve
        # levels off at what was admitted, as after a decrease. Climbing back toward
        # MAX_CUT of a rate that doubled up to 290/s for a limit of 100 overran it again.
        new = _clamp(max(measured, rate * MAX_CUT) * FIRST_BETA, ceiling)
        w_max = max(measured, new)
    left = attrs.evolve(control, left_slow=now)
    return _curve(left, new, w_max, new / w_max, CUBIC_K, now)


def _quota(control: Control, observation: Observation) -> float:
    """What the server admitted over the last busy second, up to the curve's W."""
    second = observation.admitted_second * observation.scale
    return max(MIN_RATE, min(control.w_max, second))


def _out_of_quota(control: Control, observation: Observation) -> bool:
    """Out of the slow start, a long run of 429s: a window whose quota is spent.

    The curve out of the slow start climbs toward the rate that failed, an upper bound
    only. A window that refuses everything for a while (``QUOTA_RUN`` seconds,
    ``QUOTA_STREAK`` in a row) says where its quota is: what it admitted over the last
    second, if that is clearly under the curve's W.
    """
    return (
        _first_climb(control)
        and observation.refused_for >= QUOTA_RUN
        and observation.streak >= QUOTA_STREAK
        and _quota(control, observation) < control.w_max * (1 - SAME_W)
    )


def _aim_at_quota(control: Control, rate: float, observation: Observation, now: float) -> Control:
    """The curve climbs toward the window's quota instead, from no higher than it.

    Not a decrease (no new epoch): the 429s are the overload the last one answered. A
    curve still aiming at a slow start's failed rate (three times a limit of 25/s)
    climbed past the quota within a second of the window's end, and paid a second run.
    """
    quota = _quota(control, observation)
    start = min(rate, quota)
    k = _k(control.k_base, start / quota)
    return attrs.evolve(control, rate=start, w_max=quota, t_fail=now, k=k, stamp=now)


def _plateau(control: Control, rate: float, observation: Observation, now: float) -> Control:
    """Settle at ``rate``: W there, the curve flat at it, then probing above it slowly.

    Remaining 0 on a success sets it at the rate in use (when :func:`_plateaus`); a slow
    start under a limit the headers name jumps to it. The rate is never lowered.
    """
    # A limit the server named is trusted: at it, probe slowly. Not the edge of a counter
    # well under it: a server without a burst says remaining 0 after every request, and a
    # decrease by a jitter 429 left a learning client at 0.5 R for a limit of 40 it named.
    named = observation.hint is not None and rate >= observation.hint * PACING * (1 - SAME_W)
    k = K_MAX if named else control.k_base
    return attrs.evolve(
        control,
        rate=rate,
        phase="cubic",
        w_max=rate,
        t_fail=now - k,
        k=k,
        k_base=k,
        stamp=now,
        hinted=True,
    )


def _plateaus(control: Control, rate: float) -> bool:
    """Whether a remaining-0 hint settles the rate: once per epoch, at or above W.

    Otherwise the answer is a success like any other, and the curve grows. A server whose
    burst is 1 says it after every request: taken for the hint every time, it pinned a
    slow start at 20/s for a limit of 40 and held a told client at the 31.7/s a decrease
    had left it at.
    """
    return not control.hinted and not (control.phase == "cubic" and rate < control.w_max)


def _first_strike(control: Control, rate: float, ceiling: float | None, now: float) -> bool:
    """A fresh 429 at the known ceiling, the first for ``STRIKE_WINDOW`` busy seconds."""
    if ceiling is None or rate < ceiling * PACING * (1 - 1e-9):
        return False
    struck = control.phase == "paced" and control.w_max > 0
    return not struck or now - control.t_fail > STRIKE_WINDOW


def _same_run(control: Control, observation: Observation) -> bool:
    """A 429 in the same run as a first strike at the told ceiling: the strike goes on.

    No success came between (``streak`` over 1), and the strike came after the server had
    admitted the told rate for a while: one refusal lasting a while, as a window
    refuses until the entries of a told burst leave it (a sliding log of 100/s, told
    B = 20, refused from 0.81 s until the burst's entries left at 1 s, and the second 429
    of that run cut the rate to 79/s). A limit really lower than told refuses again
    after a success, and that second run is the second strike: the strike lasts until
    the probe after the run's last 429.
    """
    return control.phase == "paced" and control.strike_run and observation.streak > 1


def _below_hint(control: Control, hint: float | None) -> bool:
    """A slow start still under the rate the server's headers suggest: jump there."""
    return control.phase == "slow" and hint is not None and (control.rate or 0.0) < hint * PACING


def grow(
    control: Control,
    *,
    ceiling: float | None,
    sent: float,
    backlogged: bool,
    now: float,
    shared: bool = False,
) -> Control:
    """Return the state after busy time passed up to ``now`` without a throttle.

    ``shared``: other processes share the state. A slow start doubles half as fast (the
    fleet's 429s reach it a reservation per process late). Each process grows the state
    by its own view of the busy clock, and the one furthest ahead wins, so there every
    increase is held to a multiple of what the fleet sends. A slow start is held to it
    in any case: a client that cannot send its rate does not learn that it is too high.
    """
    rate = control.rate
    if rate is None or control.phase in ("off", "paced") or now <= control.stamp:
        return control
    if control.phase == "slow":
        if not backlogged:  # not using the rate it has: no reason to raise it
            return attrs.evolve(control, stamp=now)
        # Shared, the fleet's 429s reach it late (one reservation per process is out):
        # a slower doubling overshoots less.
        doubling = SLOW_START_DOUBLING * (2.0 if shared else 1.0)
        # At most MOST_DOUBLINGS at once: the rise is clamped to what is sent anyway, and a
        # shared state's stamp stays old while nothing but it moves (such a step is not
        # written): 540 busy seconds later the power overflowed, and every caller of every
        # process sharing the state got OverflowError.
        doublings = min((now - control.stamp) / doubling, MOST_DOUBLINGS)
        target = rate * 2.0**doublings
    else:
        target = _on_curve(control, now)
    if target > rate and sent > 0 and (not backlogged or shared or control.phase == "slow"):
        # Not all used: raise it no further than a multiple of what is sent (botocore).
        # The send meter spans up to a busy second, so in a slow start it lags a doubling
        # or two behind: a multiple of it that lets the doubling go on.
        clamp = SLOW_START_CLAMP if control.phase == "slow" else SEND_RATE_CLAMP
        target = min(target, max(rate, clamp * sent))
    return attrs.evolve(control, rate=_clamp(target, ceiling), stamp=now)


def _refusals(control: Control, observation: Observation) -> int:
    """The 429s a bare 429's pause doubles for: in a row, or all of a young first epoch.

    Just out of the slow start, every 429 of the epoch while it is too young to measure
    counts, in a row or not. There the server still remembers the slow start's overload
    (a sliding log the last second's entries, a window its spent quota) and refuses every
    other request, so no two 429s come in a row: a pause of one interval each let half of
    the epoch's requests through to a 429 (a sliding log of 100/s refused 8 of the run's
    12 there).
    """
    if _young_first_epoch(control, observation):
        return max(observation.streak, observation.answered - observation.admitted)
    return observation.streak


def _backoff(rate: float | None, streak: int, jitter: float, refused_for: float) -> float:
    """One interval, doubled per 429 in a row, up to BACKOFF_MAX (or one interval), x jitter.

    And no longer than ``REFUSAL_SHARE`` of the time the run of 429s has lasted (or
    ``PROBE_FLOOR``): a pause is a probe for the end of a refusal, and past that end it is
    time lost. With no run timed (``refused_for`` 0: the first 429 of a run, or an echo of
    one a success ended) that is ``PROBE_FLOOR`` too, not doubling alone: a young first
    epoch counts all its 429s into ``streak``, and an echo among them paused a client of a
    sliding-window counter of 1,000/s for 2.7 s, long after the counter admitted again
    (0.67 R over the run).
    """
    interval = 1 / rate if rate else 0.1
    doubled = interval * 2.0 ** min(max(streak, 1) - 1, 30)
    longest = max(BACKOFF_MAX, interval)
    longest = min(longest, max(interval, PROBE_FLOOR, REFUSAL_SHARE * refused_for))
    return min(doubled, longest) * jitter


def step(
    control: Control,
    observation: Observation,
    now: float,
    *,
    ceiling: float | None,
    adaptive: bool,
    max_pause: float,
    jitter: float = 1.0,
) -> Decision:
    """Return what to do after one answer (the module header says how and why).

    Args:
        control: The bucket's state.
        observation: What the answer said and what the limiter measured.
        now: The bucket's busy time.
        ceiling: The known limit (configured, or the server's declared policy, the lower).
        adaptive: Whether to learn.
        max_pause: The longest pause any answer may cause.
        jitter: What a bare 429's pause is multiplied by (never one the server named).
    """
    rate = control.rate
    pause = said_pause(observation, max_pause=max_pause, paced=rate is not None)
    strike_goes_on = False
    throttled = observation.throttled
    tokens = 0.0 if throttled else observation.hints.remaining
    if throttled and observation.fresh and adaptive and rate is not None:
        if _first_strike(control, rate, ceiling, now):
            control = attrs.evolve(
                control,
                phase="paced",  # at the ceiling: nothing left to climb to
                w_max=rate,  # marks the strike
                t_fail=now,
                stamp=now,
                epoch=control.epoch + 1,
                hinted=False,
                strike_run=observation.admitted * observation.scale >= rate * RUN_AFTER,
            )
        elif _same_run(control, observation):
            strike_goes_on = True
        elif control.phase != "cubic" or _measures(observation):
            cost = 1.0 + (pause or 0.0) * rate
            control = _decrease(control, rate, observation, ceiling, now, cost)
        elif _out_of_quota(control, observation):
            control = _aim_at_quota(control, rate, observation, now)
        # else: the overload the last decrease answered, still draining, or an epoch of
        # nothing but 429s: back off only.
        rate = control.rate
    elif adaptive and not throttled and _below_hint(control, observation.hint):
        assert observation.hint is not None
        control = _plateau(control, observation.hint * PACING, observation, now)
    elif (
        observation.exhausted
        and adaptive
        and rate is not None
        and not throttled
        and control.phase != "paced"
        and _plateaus(control, rate)
    ):
        control = _plateau(control, rate, observation, now)
    elif adaptive and not throttled and not _draining(observation):
        control = grow(
            control,
            ceiling=ceiling,
            sent=observation.sent,
            backlogged=observation.backlogged,
            now=now,
            shared=observation.scale > 1,
        )
    named = None if observation.hint is None else max(MIN_RATE, observation.hint * PACING)
    learning = adaptive and control.phase in ("slow", "cubic")
    if learning and named is not None and (control.rate or 0.0) > named:
        # A limit the server named is not probed past: past it lies a window's 429s.
        control = attrs.evolve(control, rate=named)
        rate = named
    if pause is None and throttled:
        # A bare 429: pause one interval of the (lowered) rate, so the requests queued
        # behind it do not all meet the same empty server bucket; twice as long for each
        # 429 in a row (a window that refuses everything until it ends); spread, so that
        # clients refused together do not all come back together.
        run = _refusals(control, observation)
        backoff = _backoff(rate, run, jitter, observation.refused_for)
        if strike_goes_on or (run >= 2 and _young_first_epoch(control, observation)):
            # At a told limit, a refusal that outlasts its first 429 is a window's: probe
            # for its end every PROBE_FLOOR, not every interval (five 429s in 0.19 s). So
            # is a second 429 just out of the slow start: the server still remembers its
            # overload (a fixed window of 100/s spent its quota 0.43 s before its end,
            # and doubling from an interval met it six times, five in the first 0.1 s).
            backoff = max(backoff, PROBE_FLOOR * jitter)
        pause = min(backoff, max_pause)
    elif pause is None:
        pause = 0.0  # not a 429, and the server named no pause
    if strike_goes_on:
        # The strike lasts until the probe after its last 429: a window refusing again
        # after a success within STRIKE_WINDOW of it holds less than it was told.
        control = attrs.evolve(control, t_fail=now + pause)
    return Decision(control, pause=pause, tokens=tokens)
