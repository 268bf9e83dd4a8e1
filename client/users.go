package client

// SCRAM users, as `skiff user` administers them through the admin API
// (AlterUserScramCredentials, DescribeUserScramCredentials). The broker keeps
// a salted, iterated form of the password, never the password.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// UserSpec is a user to create, or to give a new password.
type UserSpec struct {
	Name       string
	Mechanisms []kadm.ScramMechanism // a credential is stored for each
	Iterations int32                 // SCRAM iterations (4096 to 16384)
	Password   string
}

// CreateUser stores the SCRAM credentials of s, replacing those the user had.
func (k *Client) CreateUser(ctx context.Context, s UserSpec) error {
	var ups []kadm.UpsertSCRAM
	for _, m := range s.Mechanisms {
		ups = append(ups, kadm.UpsertSCRAM{User: s.Name, Mechanism: m, Iterations: s.Iterations, Password: s.Password})
	}
	res, err := k.admin.AlterUserSCRAMs(ctx, nil, ups)
	if err != nil {
		return fmt.Errorf("create user %q: %w", s.Name, k.Explain(err))
	}
	if r := res[s.Name]; r.Err != nil {
		return fmt.Errorf("create user %q: %w%s", s.Name, r.Err, BrokerSays(r.ErrMessage))
	}
	return nil
}

// ListUsers writes a table of the users and their SCRAM mechanisms to w.
func (k *Client) ListUsers(ctx context.Context, w io.Writer) error {
	users, err := k.admin.DescribeUserSCRAMs(ctx)
	if err != nil {
		return fmt.Errorf("list users: %w", k.Explain(err))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMECHANISMS")
	for _, u := range users.Sorted() {
		var mechs []string
		for _, ci := range u.CredInfos {
			mechs = append(mechs, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
		}
		fmt.Fprintf(tw, "%s\t%s\n", u.User, strings.Join(mechs, ", "))
	}
	return tw.Flush()
}

// DeleteUser deletes the credentials of user name for the mechanisms only, or
// all of them when only is nil, and returns the mechanisms deleted.
func (k *Client) DeleteUser(ctx context.Context, name string, only []kadm.ScramMechanism) ([]kadm.ScramMechanism, error) {
	if only == nil {
		described, err := k.admin.DescribeUserSCRAMs(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("delete user %q: %w", name, k.Explain(err))
		}
		u := described[name]
		if errors.Is(u.Err, kerr.ResourceNotFound) {
			return nil, fmt.Errorf("user %q does not exist", name)
		} else if u.Err != nil {
			return nil, fmt.Errorf("delete user %q: %w%s", name, u.Err, BrokerSays(u.ErrMessage))
		}
		for _, ci := range u.CredInfos {
			only = append(only, ci.Mechanism)
		}
	}
	var dels []kadm.DeleteSCRAM
	for _, m := range only {
		dels = append(dels, kadm.DeleteSCRAM{User: name, Mechanism: m})
	}
	res, err := k.admin.AlterUserSCRAMs(ctx, dels, nil)
	if err != nil {
		return nil, fmt.Errorf("delete user %q: %w", name, k.Explain(err))
	}
	if r := res[name]; errors.Is(r.Err, kerr.ResourceNotFound) {
		return nil, fmt.Errorf("user %q has no credential for %s", name, MechanismNames(only, " or "))
	} else if r.Err != nil {
		return nil, fmt.Errorf("delete user %q: %w%s", name, r.Err, BrokerSays(r.ErrMessage))
	}
	return only, nil
}

// MechanismNames joins the names of ms with sep.
func MechanismNames(ms []kadm.ScramMechanism, sep string) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.String()
	}
	return strings.Join(names, sep)
}

// ParseScramMechanisms reads a comma-separated list of SCRAM mechanisms (skiff
// user's --mechanism).
func ParseScramMechanisms(s string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	for _, m := range strings.Split(s, ",") {
		switch strings.ToUpper(strings.TrimSpace(m)) {
		case "SCRAM-SHA-512":
			out = append(out, kadm.ScramSha512)
		case "SCRAM-SHA-256":
			out = append(out, kadm.ScramSha256)
		default:
			return nil, fmt.Errorf("--mechanism %q: want SCRAM-SHA-512 or SCRAM-SHA-256 (comma-separated)", m)
		}
	}
	return out, nil
}

// ReadPassword reads a password from the first line of r, standard input.
func ReadPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("the password on standard input is empty")
	}
	return line, nil
}
