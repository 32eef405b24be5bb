"""Co-allocation across sites (issue 16): one reservation on several
clusters for one common window, all or nothing, whatever crashes. The
library behind plus_coreserve, plus_costatus and plus_cocancel; a portal
imports it (``Coordinator``)."""
