"""PluS's reservable.ad policies, evaluated with HTCondor's ClassAd library."""
