package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// runApp runs the skiff app with args (without the program name), stdin and
// captured stdout and stderr, as main does but without exiting.
func runApp(stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	app.Reader = stdin
	err = app.Run(append([]string{"skiff"}, args...))
	return out.String(), errOut.String(), err
}

func TestClientFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "list", "--brokers", "::1"}, "brackets"},
		{[]string{"topic", "list", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"topic", "list", "extra"}, `unexpected argument "extra"`},
	} {
		_, _, err := runApp(nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}
