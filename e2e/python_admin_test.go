package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"

	"skiff/internal/testnode"
)

// TestKafkaPythonAdmin: kafka-python's KafkaAdminClient, a client not written
// here, creates a topic, changes its configs with AlterConfigs, reads them back
// with DescribeConfigs (topic and broker) and gets Kafka's error for a bad value.
// `make test` installs python3-kafka, so a missing one fails the test rather than
// skipping it.
func TestKafkaPythonAdmin(t *testing.T) {
	if out, err := exec.Command(python3, "-c", "import kafka").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kafka (install Debian's python3-kafka; make test does): %v\n%s", python3, err, out)
	}
	n := testnode.Start(t)
	out, err := exec.Command(python3, "testdata/kafka_python_admin.py", n.Addr, "kafka-python").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kafka_python_admin.py: %v\n%s%s", err, out, stderr)
	}
	type alterResult struct {
		ErrorCode    int     `json:"error_code"`
		ErrorMessage *string `json:"error_message"`
	}
	var got struct {
		Alter         alterResult `json:"alter"`
		AlterBad      alterResult `json:"alter_bad"`
		DescribeTopic struct {
			ErrorCode   int    `json:"error_code"`
			RetentionMs string `json:"retention.ms"`
			SegmentMs   string `json:"segment.ms"`
			Count       int    `json:"count"`
		} `json:"describe_topic"`
		DescribeBroker struct {
			ErrorCode     int    `json:"error_code"`
			NumPartitions string `json:"num.partitions"`
		} `json:"describe_broker"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Alter.ErrorCode != 0 {
		t.Errorf("AlterConfigs: error %d %v", got.Alter.ErrorCode, got.Alter.ErrorMessage)
	}
	want := "Invalid value soon for configuration retention.ms: Not a number of type LONG"
	if got.AlterBad.ErrorCode != 40 || got.AlterBad.ErrorMessage == nil || *got.AlterBad.ErrorMessage != want {
		t.Errorf("AlterConfigs with a bad value: error %d %v, want INVALID_CONFIG (40) %q", got.AlterBad.ErrorCode, got.AlterBad.ErrorMessage, want)
	}
	if d := got.DescribeTopic; d.ErrorCode != 0 || d.RetentionMs != "3600000" || d.SegmentMs != "7200000" || d.Count < 30 {
		t.Errorf("DescribeConfigs of the topic: %+v, want retention.ms 3600000, segment.ms 7200000 and every topic config", d)
	}
	if d := got.DescribeBroker; d.ErrorCode != 0 || d.NumPartitions != "1" {
		t.Errorf("DescribeConfigs of broker 1: %+v", d)
	}
}
