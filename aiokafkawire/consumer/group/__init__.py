"""aiokafkawire.consumer.group."""
