package kafkaapi

// What AlterConfigs (33) and IncrementalAlterConfigs (44) share: one resource's
// configs are changed as a whole (all of a request's changes to it, or none), in
// etcd, by a compare-and-swap that re-applies the change on a concurrent one; the
// answer waits until this node applies the new configs, so a DescribeConfigs sent
// here next sees them.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

// configSchema is what changing a resource's configs needs to know of its
// config names: which are lists (APPEND and SUBTRACT work on those only), and the
// default a list starts from when the resource does not set it.
type configSchema struct {
	isList    func(name string) bool
	defaultOf func(name string) string
}

// topicSchema is the schema of topic configs.
var topicSchema = configSchema{
	isList: func(name string) bool {
		spec, ok := cluster.LookupTopicConfig(name)
		return ok && spec.Type == cluster.ConfigTypeList
	},
	defaultOf: func(name string) string {
		spec, _ := cluster.LookupTopicConfig(name)
		return spec.Default
	},
}

// alterFunc turns a resource's current configs (a copy it may change) into the
// new ones.
type alterFunc func(schema configSchema, cur map[string]string) (map[string]string, error)

// alterResource changes the configs of one resource, or with validateOnly only
// checks the change.
func (s *Server) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, validateOnly bool, alter alterFunc) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return s.alterTopicConfigs(ctx, name, validateOnly, alter)
	case kmsg.ConfigResourceTypeBroker:
		return s.alterBrokerConfigs(ctx, name, validateOnly, alter)
	default:
		return newKafkaError(kerr.InvalidRequest, "Unknown resource type %d: only the configs of topics and brokers can be altered", typ)
	}
}

// alterOne answers one resource of AlterConfigs or IncrementalAlterConfigs: the
// client's right to alter it comes first (as in Kafka), then parseErr (its
// changes as read) and whether the request lists it twice, then the change.
func (s *Server) alterOne(ctx context.Context, c *conn, typ kmsg.ConfigResourceType, name string, validateOnly, twice bool, parseErr error, alter alterFunc) (int16, *string) {
	err := parseErr
	if twice {
		err = newKafkaError(kerr.InvalidRequest, "the resource is listed more than once")
	}
	if code := c.configsRefused(acl.OpAlterConfigs, typ, name); code != nil {
		err = newKafkaError(code, "%s", code.Description)
	}
	if err == nil {
		err = s.alterResource(ctx, typ, name, validateOnly, alter)
	}
	return alterError(err)
}

// alterTopicConfigs changes a topic's overrides.
func (s *Server) alterTopicConfigs(ctx context.Context, name string, validateOnly bool, alter alterFunc) error {
	t, ok := s.cache.Topic(name)
	if !ok {
		return newKafkaError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	}
	change := func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		return alter(topicSchema, cur)
	}
	if validateOnly {
		next, err := change(maps.Clone(t.Configs))
		if err == nil {
			err = cluster.ValidateTopicConfigs(next)
		}
		return err
	}
	rev, err := s.meta.AlterTopicConfigs(ctx, name, change)
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return newKafkaError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	case err != nil:
		var ke *kafkaError
		var ce *cluster.ConfigError
		if errors.As(err, &ke) || errors.As(err, &ce) {
			return err
		}
		return metadataWriteError("alter the configs of topic "+strconv.Quote(name), err)
	}
	if err := s.waitApplied(ctx, rev); err != nil {
		return newKafkaError(kerr.RequestTimedOut, "the configs of topic %q were changed but are not applied here yet: %v", name, err)
	}
	return nil
}

// alterError is the error code and message of a resource's answer.
func alterError(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	msg := err.Error()
	var ce *cluster.ConfigError
	if errors.As(err, &ce) {
		return kerr.InvalidConfig.Code, &msg
	}
	var ke *kafkaError
	if errors.As(err, &ke) {
		return ke.code.Code, &msg
	}
	return kerr.UnknownServerError.Code, &msg
}

// resourceKey names a resource for finding one listed twice in a request.
func resourceKey(typ kmsg.ConfigResourceType, name string) string {
	return strconv.Itoa(int(typ)) + "/" + name
}

// incrementalChange is one change of IncrementalAlterConfigs.
type incrementalChange struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// applyIncremental applies SET, DELETE, APPEND and SUBTRACT changes to cur, as
// Kafka's controller does: APPEND adds the items not in the list yet, SUBTRACT
// removes items; both work on lists only, starting from the default when the
// resource does not set the config.
func applyIncremental(schema configSchema, cur map[string]string, changes []incrementalChange) (map[string]string, error) {
	for _, c := range changes {
		switch c.op {
		case kmsg.IncrementalAlterConfigOpSet:
			cur[c.name] = *c.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(cur, c.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !schema.isList(c.name) {
				return nil, newKafkaError(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", c.op, c.name)
			}
			v, ok := cur[c.name]
			if !ok {
				v = schema.defaultOf(c.name)
			}
			list := listItems(v)
			for _, item := range strings.Split(*c.value, ",") {
				if c.op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(list, item) {
					list = append(list, item)
				}
				if c.op == kmsg.IncrementalAlterConfigOpSubtract {
					list = slices.DeleteFunc(list, func(s string) bool { return s == item })
				}
			}
			cur[c.name] = strings.Join(list, ",")
		}
	}
	return cur, nil
}

// listItems splits a list config's value, dropping empty items (Kafka's getParts).
func listItems(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item != "" {
			out = append(out, item)
		}
	}
	return out
}
