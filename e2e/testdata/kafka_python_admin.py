"""kafka-python's KafkaAdminClient against a broker: create a topic, change its
configs with AlterConfigs, read them back with DescribeConfigs (topic and broker),
and have a bad value refused. Prints one JSON object with what it saw; the Go test
(python_admin_test.go) checks it. Usage: kafka_python_admin.py HOST:PORT TOPIC"""

import json
import sys

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

addr, topic = sys.argv[1], sys.argv[2]
admin = KafkaAdminClient(bootstrap_servers=addr, client_id="kafka-python-admin-test")
out = {}

admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"retention.ms": "86400000"})])


def alter(configs):
    resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
    code, message = resp.resources[0][0], resp.resources[0][1]
    return {"error_code": code, "error_message": message}


def describe(kind, name):
    resp = admin.describe_configs([ConfigResource(kind, name)])[0]
    code, _, _, _, entries = resp.resources[0]
    return code, {entry[0]: entry[1] for entry in entries}


out["alter"] = alter({"retention.ms": "3600000", "segment.ms": "7200000"})
out["alter_bad"] = alter({"retention.ms": "soon"})
code, configs = describe(ConfigResourceType.TOPIC, topic)
out["describe_topic"] = {"error_code": code, "retention.ms": configs.get("retention.ms"),
                         "segment.ms": configs.get("segment.ms"), "count": len(configs)}
code, configs = describe(ConfigResourceType.BROKER, "1")
out["describe_broker"] = {"error_code": code, "num.partitions": configs.get("num.partitions")}
admin.close()
print(json.dumps(out))
