package appliance

// The console's write actions (console.Admin): each goes through the path a
// Kafka client or `skiff cluster` would take (CreateTopics' placement and
// validation, the coordinator's OffsetCommit and DeleteGroups, remove-node), and
// logins check a SCRAM user's password against the credentials SASL uses.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/auth"
	"skiff/console"
)

// consoleAdmin is the console's Admin over the node.
type consoleAdmin struct{ n *Node }

// AuthRequired: some Kafka listener authenticates its clients (SASL, or SSL with
// client certificates), or the ACL authorizer decides what they may do, so the
// console asks for a login too.
func (a consoleAdmin) AuthRequired() bool {
	if a.n.acl != nil {
		return true
	}
	for _, l := range a.n.listeners {
		if l.protocol.SASL() || l.protocol.TLS() && a.n.cfg.TLSClientCA != "" {
			return true
		}
	}
	return false
}

func (a consoleAdmin) Authenticate(ctx context.Context, user, password string) (ok, admin bool, err error) {
	for _, mech := range auth.ScramMechanisms {
		cred, found, err := a.n.store.ScramCredential(ctx, user, mech)
		if err != nil {
			return false, false, err
		}
		if found && cred.CheckPassword(password) {
			return true, slices.Contains(a.n.cfg.ConsoleAdmins, user) || a.super(user), nil
		}
	}
	return false, false, nil
}

// HTTPAdmin: r carries this node's HTTP credentials (http-token-file's bearer
// token, or a client certificate of tls-client-ca on the TLS HTTP port), as the
// admin API asks; they make it a console admin.
func (a consoleAdmin) HTTPAdmin(r *http.Request) (string, bool) {
	if !a.n.cfg.httpCredentials() || a.n.checkHTTPCredentials(r) != "" {
		return "", false
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return "certificate " + r.TLS.VerifiedChains[0][0].Subject.CommonName, true
	}
	return "HTTP token", true
}

// super: user is one of super-users (with the ACL authorizer), who may do everything.
func (a consoleAdmin) super(user string) bool {
	if a.n.acl == nil {
		return false
	}
	return a.n.acl.Authorize(a.n.cache.Snapshot().ACLs(), acl.Client{Principal: auth.User(user)}, acl.OpAll, acl.ResourceCluster, acl.ClusterName).Rule == acl.RuleSuperUser
}

// Allowed asks the ACL authorizer as the Kafka handlers do, for the user's
// principal at its HTTP address.
func (a consoleAdmin) Allowed(user string, addr netip.Addr, op acl.Operation, t acl.ResourceType, name string) bool {
	if a.n.acl == nil {
		return true
	}
	return a.n.acl.Authorize(a.n.cache.Snapshot().ACLs(), acl.Client{Principal: auth.User(user), Addr: addr}, op, t, name).Allowed
}

func (a consoleAdmin) CreateTopic(ctx context.Context, name string, partitions int32, rf int16) error {
	return a.n.kafka.CreateTopic(ctx, name, partitions, rf)
}

// SetTopicConfig changes one override of the topic's configs in one
// compare-and-swap of its key (Store.AlterTopicConfigs: validated, never losing a
// concurrent change).
func (a consoleAdmin) SetTopicConfig(ctx context.Context, topic, name, value string) error {
	rev, err := a.n.store.AlterTopicConfigs(ctx, topic, func(configs map[string]string) (map[string]string, error) {
		if configs == nil {
			configs = map[string]string{}
		}
		if value == "" {
			delete(configs, name)
		} else {
			configs[name] = value
		}
		return configs, nil
	})
	if err != nil {
		return err
	}
	return a.n.cache.WaitRevision(ctx, rev)
}

func (a consoleAdmin) CommitOffsets(ctx context.Context, group string, offsets []console.Committed) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 7, group, -1
	byTopic := map[string]int{}
	for _, o := range offsets {
		i, ok := byTopic[o.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[o.Topic] = i
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = o.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	var errs []error
	for _, t := range a.n.groups.OffsetCommit(ctx, req).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s partition %d: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return groupError(errors.Join(errs...))
}

func (a consoleAdmin) DeleteGroup(ctx context.Context, group string) error {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	for _, g := range a.n.groups.DeleteGroups(ctx, req).Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return groupError(err)
		}
	}
	return nil
}

// groupError says what a coordinator's refusal means for the console.
func groupError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.NonEmptyGroup), errors.Is(err, kerr.UnknownMemberID):
		return fmt.Errorf("the group has members: stop its consumers first (%w)", err)
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("%w: %v", console.ErrNotHere, err)
	}
	return err
}

func (a consoleAdmin) RemoveNode(ctx context.Context, id int32, drain bool) (string, error) {
	res, rerr := a.n.removeNode(ctx, id, drain)
	if rerr != nil {
		return "", rerr
	}
	return res.Message, nil
}
