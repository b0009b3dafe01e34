"""What a user should do about a broker error: the hand-written column of ``docs/errors.md``.

``tools/gen_docs.py`` builds the error reference from the generated error classes (code, name,
Kafka's description, ``retriable``) and the client's own classification
(:func:`aiokafkawire.errors.action_for`: what the client does); this table adds the advice.
An error without an entry gets the advice of its action (:data:`BY_ACTION`).  Every key must
name an error of the table (a test holds it), so the advice cannot outlive the error.
"""

from __future__ import annotations

#: Advice by the client's action, for errors without an entry of their own.
BY_ACTION = {
    "retry": "Nothing: the client retries. If it persists until the operation's timeout, "
    "check the brokers' health and logs.",
    "refresh metadata": "Nothing: the client retries with fresh metadata. If it persists, the "
    "topic or partition may really be missing or without a leader: check it with "
    "`aiokafkawire topics describe`.",
    "find coordinator": "Nothing: the client finds the coordinator again. If it persists, check "
    "the `__consumer_offsets` / `__transaction_state` topics and the brokers' logs.",
    "fatal": "Fix the cause the description names; repeating the same call fails the same way.",
}

#: Advice for one error, by its name in Kafka's table.
ADVICE = {
    "UNKNOWN_SERVER_ERROR": "Read the broker's log at the time of the error: the broker hit an "
    "exception it did not map to a code.",
    "OFFSET_OUT_OF_RANGE": "The consumer resets to `auto_offset_reset` (`earliest`/`latest`); "
    'with `"none"` you get `OffsetOutOfRangeClientError` and choose with `seek()`.',
    "CORRUPT_MESSAGE": "If it persists, compare the producer's and broker's compression "
    "support and the topic's `max.message.bytes`.",
    "UNKNOWN_TOPIC_OR_PARTITION": "Create the topic (or enable `auto.create.topics.enable` on "
    "the broker); check the topic name and the partition number.",
    "REQUEST_TIMED_OUT": "Nothing for a while: the client retries. Persistent: the broker is "
    "overloaded or a replica is slow (`acks=all` waits for the in-sync replicas).",
    "MESSAGE_TOO_LARGE": "Raise the topic's `max.message.bytes` (or the broker's "
    "`message.max.bytes`), or send smaller records; `compression_type` helps.",
    "OFFSET_METADATA_TOO_LARGE": "Commit shorter metadata strings with your offsets.",
    "NOT_ENOUGH_REPLICAS": "Fewer replicas are in sync than the topic's "
    "`min.insync.replicas`: bring the brokers back, or lower the setting.",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "The record was written but may not be replicated: "
    "the producer retries (idempotence keeps it from being duplicated).",
    "INVALID_TOPIC_EXCEPTION": "Use a topic name of letters, digits, `.`, `_` and `-` (at most "
    "249 characters), and do not write to internal topics.",
    "RECORD_LIST_TOO_LARGE": "Lower `batch_size` or raise the broker's `message.max.bytes`.",
    "INVALID_REQUIRED_ACKS": 'Use `acks` 0, 1 or `"all"`.',
    "ILLEGAL_GENERATION": "The group rebalanced: the consumer rejoins; records processed "
    "since the last commit may be delivered again, so make processing idempotent.",
    "UNKNOWN_MEMBER_ID": "The member was removed from the group (for example after "
    "`max_poll_interval_ms` without a poll): the consumer rejoins; process faster or raise "
    "the interval.",
    "INVALID_SESSION_TIMEOUT": "Choose `session_timeout_ms` between the broker's "
    "`group.min.session.timeout.ms` and `group.max.session.timeout.ms`.",
    "REBALANCE_IN_PROGRESS": "Nothing: the consumer rejoins the group; commit again after the "
    "rebalance (`on_partitions_assigned`).",
    "TOPIC_AUTHORIZATION_FAILED": "Grant the principal the operation on the topic "
    "(`Admin.create_acls` or `kafka-acls.sh`).",
    "GROUP_AUTHORIZATION_FAILED": "Grant the principal READ on the consumer group.",
    "CLUSTER_AUTHORIZATION_FAILED": "Grant the principal the cluster operation (for example "
    "IDEMPOTENT_WRITE for idempotent producers on old brokers, ALTER for admin calls).",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "Grant the principal WRITE (and DESCRIBE) on the "
    "`transactional_id`.",
    "INVALID_TIMESTAMP": "Send timestamps within the topic's "
    "`message.timestamp.before.max.ms`/`after.max.ms` of the broker's clock.",
    "UNSUPPORTED_SASL_MECHANISM": "Use a mechanism the listener enables "
    "(`sasl.enabled.mechanisms`): PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.",
    "ILLEGAL_SASL_STATE": "A client bug or a listener that is not SASL: check `security_protocol` "
    "against the listener.",
    "UNSUPPORTED_VERSION": "The broker does not support the request at any version this client "
    "sends: upgrade the broker, or leave the feature out.",
    "TOPIC_ALREADY_EXISTS": "Nothing, if the topic is the one you meant: treat it as success "
    "(`raise_on_error=False` gives the result per topic).",
    "INVALID_PARTITIONS": "Use a partition count of at least 1; partitions can only be added.",
    "INVALID_REPLICATION_FACTOR": "Use a replication factor no larger than the number of brokers.",
    "POLICY_VIOLATION": "The broker's create-topic or alter-config policy refused the request: "
    "ask the cluster's operator what it allows.",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "The idempotent producer lost its sequence (records lost "
    "on the broker): the client resets the producer id; check for unclean leader elections.",
    "DUPLICATE_SEQUENCE_NUMBER": "Nothing: the broker already has the batch; the client treats "
    "it as delivered.",
    "INVALID_PRODUCER_EPOCH": "Another producer with the same `transactional_id` took over: "
    "close this producer (zombie fencing).",
    "INVALID_TXN_STATE": "Call the transaction methods in order: `begin_transaction`, sends, "
    "`commit_transaction` or `abort_transaction`.",
    "INVALID_PRODUCER_ID_MAPPING": "The transactional producer's id expired: the client gets a "
    "new one; long idle transactional producers should raise `transactional.id.expiration.ms`.",
    "INVALID_TRANSACTION_TIMEOUT": "Choose `transaction_timeout_ms` at most the broker's "
    "`transaction.max.timeout.ms`.",
    "CONCURRENT_TRANSACTIONS": "Nothing: the previous transaction is still ending; the client "
    "retries.",
    "SECURITY_DISABLED": "Enable security on the cluster (an authorizer, SASL) before managing "
    "ACLs or credentials.",
    "SASL_AUTHENTICATION_FAILED": "Check the user name, password and mechanism; SCRAM users "
    "must exist on the cluster (`Admin.alter_user_scram_credentials` or `kafka-configs.sh`).",
    "PRODUCER_FENCED": "Another producer with the same `transactional_id` took over: close "
    "this one. Give each instance its own `transactional_id`.",
    "FENCED_INSTANCE_ID": "Another consumer uses the same `group_instance_id`: give each "
    "instance its own.",
    "GROUP_MAX_SIZE_REACHED": "The group has `group.max.size` members already: use fewer "
    "consumers or raise the broker's limit.",
    "UNSTABLE_OFFSET_COMMIT": "Nothing: a transaction on the partitions is still open; the "
    "client retries the offset fetch.",
    "THROTTLING_QUOTA_EXCEEDED": "Nothing: the client waits and retries; create or delete "
    "fewer topics at once if it persists.",
    "GROUP_ID_NOT_FOUND": "Check the group id; an empty group has no committed offsets yet.",
    "NON_EMPTY_GROUP": "Stop the group's consumers before deleting it or its offsets.",
    "INCONSISTENT_GROUP_PROTOCOL": "The group already runs with another protocol or assignor: "
    "use the same `group_protocol` and `partition_assignment_strategy` in every member.",
    "UNRELEASED_INSTANCE_ID": "A static member left without releasing its id: wait for its "
    "session to expire.",
    "TRANSACTIONAL_ID_NOT_FOUND": "Check the `transactional_id`: no transaction was ever begun "
    "with it (or it expired).",
    "UNKNOWN_PRODUCER_ID": "The producer's state expired on the broker (its records were "
    "deleted): the client resets the producer id and retries.",
    "INVALID_RECORD": "The broker refused the record (for example a null key on a compacted "
    "topic): fix the record.",
    "FENCED_MEMBER_EPOCH": "The KIP-848 member was fenced (too slow): the consumer rejoins.",
    "INVALID_RECORD_STATE": "The share-group record was already acknowledged or released: "
    "acknowledge each record once, before its acquisition lock expires.",
    "SHARE_SESSION_NOT_FOUND": "Nothing: the share consumer opens a new share session.",
    "INVALID_SHARE_SESSION_EPOCH": "Nothing: the share consumer opens a new share session.",
    "GROUP_SUBSCRIBED_TO_TOPIC": "Unsubscribe the group's members from the topic first.",
    "REBOOTSTRAP_REQUIRED": "Nothing: the client contacts its bootstrap servers again.",
}
