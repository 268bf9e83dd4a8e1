package main

import (
	"strings"
	"testing"
)

func TestConfigList(t *testing.T) {
	var l configList
	for _, kv := range []string{"cleanup.policy=compact,delete", "a.b= x=y ", "empty="} {
		if err := l.Set(kv); err != nil {
			t.Fatalf("Set(%q): %v", kv, err)
		}
	}
	m, err := l.configs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact,delete", "a.b": " x=y ", "empty": ""}
	if len(m) != len(want) {
		t.Fatalf("configs = %v", m)
	}
	for k, v := range want {
		if m[k] == nil || *m[k] != v {
			t.Errorf("config %s = %v; want %q", k, m[k], v)
		}
	}

	for _, bad := range []string{"novalue", "=v", " =v"} {
		if err := new(configList).Set(bad); err == nil || !strings.Contains(err.Error(), "want KEY=VALUE") {
			t.Errorf("Set(%q): err = %v", bad, err)
		}
	}

	dup := configList{listFlag: listFlag{values: []string{"a=1", "a=2"}}}
	if _, err := dup.configs(); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate key: err = %v", err)
	}
	if m, err := new(configList).configs(); m != nil || err != nil {
		t.Errorf("no configs = %v, %v; want nil, nil", m, err)
	}
}

func TestTopicCreateFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create"}, "missing topic name"},
		{[]string{"topic", "create", "a", "b"}, `unexpected argument "b"`},
		{[]string{"topic", "create", "a", "--partitions", "0"}, "--partitions must be at least 1"},
		{[]string{"topic", "create", "a", "-r", "-5"}, "--replication-factor must be at least 1"},
		{[]string{"topic", "create", "a", "--config", "x"}, "want KEY=VALUE"},
		{[]string{"topic", "create", "a", "--config", "x=1", "--config", "x=2"}, "--config x given twice"},
		{[]string{"topic", "describe"}, "missing topic name"},
		{[]string{"topic", "delete", ""}, "topic name must not be empty"},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}
