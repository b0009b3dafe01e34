"""``aiokafka.coordinator``: the group protocol's member metadata and the assignors."""
