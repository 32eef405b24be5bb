"""Events: what happened to ARs and their jobs, as the event stream and the
webhooks carry it (``catalog.py``), who may see one (``visibility.py``),
the webhooks' URLs and signatures (``hooks.py``, ``signing.py``), their
bounded POST (``post.py``), and the leader's delivery (``delivery.py``)."""
