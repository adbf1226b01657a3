"""What a budget can measure around a region: one module per instrument, behind one protocol.

``base`` is the protocol and the table of instruments by name; ``registry`` finds every module here
and picks the instruments a set of budget limits needs; ``measurement`` is what they fill in. A new
instrument is one module that defines an ``Instrument`` subclass decorated with ``@register``.
Only ``base`` and ``measurement`` are free of torch; the instruments import it.
"""
