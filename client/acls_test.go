package client

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

// TestACLError: the ACL APIs' errors say what to do; others carry the broker's
// message.
func TestACLError(t *testing.T) {
	if err := aclError(0, nil); err != nil {
		t.Errorf("code 0: %v", err)
	}
	for _, tc := range []struct {
		code int16
		msg  *string
		want string
	}{
		{kerr.SecurityDisabled.Code, nil, "start them with --authorizer acl"},
		{kerr.ClusterAuthorizationFailed.Code, nil, "needs ALTER (listing them DESCRIBE) on the cluster"},
		{kerr.InvalidRequest.Code, kmsg.StringPtr("bad host"), "(broker says: bad host)"},
	} {
		if err := aclError(tc.code, tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("code %d: %v, want it to contain %q", tc.code, err, tc.want)
		}
	}
}

func TestWriteACLs(t *testing.T) {
	var b bytes.Buffer
	if err := writeACLs(&b, []aclRow{{"User:alice", "ALLOW", "READ", "TOPIC", "LITERAL", "orders", "*"}}); err != nil {
		t.Fatal(err)
	}
	want := "PRINCIPAL   PERMISSION  OPERATION  RESOURCE  PATTERN  NAME    HOST\n" +
		"User:alice  ALLOW       READ       TOPIC     LITERAL  orders  *\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCountOf(t *testing.T) {
	if got := CountOf(1, "group") + ", " + CountOf(0, "group") + ", " + CountOf(2, "partition replica"); got != "1 group, 0 groups, 2 partition replicas" {
		t.Errorf("got %q", got)
	}
}

func TestParseACLOperations(t *testing.T) {
	ops, err := ParseACLOperations([]string{"Read", "all"}, acl.ResourceTopic)
	if err != nil || len(ops) != 2 || ops[0] != acl.OpRead || ops[1] != acl.OpAll {
		t.Errorf("Read, all on a topic: %v, %v", ops, err)
	}
	for _, tc := range []struct {
		names []string
		rt    acl.ResourceType
		want  string
	}{
		{[]string{"Fly"}, acl.ResourceTopic, `--operation "Fly": want Read, Write`},
		{[]string{"Any"}, acl.ResourceAny, `--operation "Any"`},
		{[]string{"ClusterAction"}, acl.ResourceTopic, "--operation ClusterAction: a topic ACL supports"},
	} {
		if _, err := ParseACLOperations(tc.names, tc.rt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v on %v: %v, want %q", tc.names, tc.rt, err, tc.want)
		}
	}
}
