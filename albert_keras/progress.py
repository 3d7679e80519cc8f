"""What a long command's progress lines say: the time left (the machine's
name is ``albert_keras.cpu``'s)."""


def duration(seconds):
    """``seconds`` in words a progress line can show (``"40 s"``, ``"12 min"``,
    ``"2.5 h"``).

    Example:
    >>> duration(42), duration(720), duration(9000)
    ('42 s', '12 min', '2.5 h')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def time_left(elapsed, done, total):
    """``"about 12 min left"`` at the speed so far (``done`` of ``total``
    units in ``elapsed`` seconds); ``""`` before any unit is done.

    Example:
    >>> time_left(60, 10, 40)
    'about 3 min left'
    """
    if done <= 0 or total <= done:
        return ""
    return f"about {duration(elapsed / done * (total - done))} left"
