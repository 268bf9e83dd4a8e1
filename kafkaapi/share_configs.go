package kafkaapi

// The GROUP config resource (type 32) of DescribeConfigs and
// IncrementalAlterConfigs: a group's configs (share.* for share groups, consumer.*
// for KIP-848 consumer groups), kept by package sharegroup in __share_group_state,
// where every node reads them.

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/groups"
	"skiff/sharegroup"
)

// describeGroupConfigs fills rr with a group's configs.
func (s *Server) describeGroupConfigs(c *conn, rr *kmsg.DescribeConfigsResponseResource, want func(string) bool) {
	if s.cfg.Shares == nil || s.cfg.ShareConfigs == nil {
		rr.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	if err := s.cfg.ShareConfigs.LoadGroupConfigs(ctx); err != nil {
		rr.ErrorCode = kerr.CoordinatorNotAvailable.Code
		msg := err.Error()
		rr.ErrorMessage = &msg
		return
	}
	entries := s.cfg.Shares.DescribeGroupConfigs(rr.ResourceName)
	if s.cfg.Groups != nil {
		for _, e := range s.cfg.Groups.DescribeGroupConfigs(s.cfg.ShareConfigs.GroupConfigs(rr.ResourceName)) {
			entries = append(entries, sharegroup.GroupConfigEntry{Name: e.Name, Value: e.Value, IsDefault: e.IsDefault, Int: true})
		}
	}
	slices.SortFunc(entries, func(a, b sharegroup.GroupConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range entries {
		if !want(e.Name) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := e.Value
		rc.Name, rc.Value, rc.IsDefault = e.Name, &v, e.IsDefault
		rc.Source = kmsg.ConfigSourceGroupConfig
		if e.IsDefault {
			rc.Source = kmsg.ConfigSourceDefaultConfig
		}
		rc.ConfigType = kmsg.ConfigTypeString
		if e.Int {
			rc.ConfigType = kmsg.ConfigTypeInt
		}
		rr.Configs = append(rr.Configs, rc)
	}
}

// alterGroupConfigs applies IncrementalAlterConfigs changes (SET 0, DELETE 1) to
// a group's configs: checked as a whole, then written, or not at all.
func (s *Server) alterGroupConfigs(c *conn, r *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if !c.allowed(acl.OpAlterConfigs, acl.ResourceGroup, r.ResourceName) {
		return kerr.GroupAuthorizationFailed.Code, ""
	}
	if s.cfg.Shares == nil || s.cfg.ShareConfigs == nil {
		return kerr.InvalidRequest.Code, "share groups are not served"
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	if err := s.cfg.ShareConfigs.LoadGroupConfigs(ctx); err != nil {
		return kerr.CoordinatorNotAvailable.Code, err.Error()
	}
	next := maps.Clone(s.cfg.ShareConfigs.GroupConfigs(r.ResourceName))
	if next == nil {
		next = map[string]string{}
	}
	seen := map[string]bool{}
	for _, cf := range r.Configs {
		if seen[cf.Name] {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		seen[cf.Name] = true
		switch cf.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if cf.Value == nil {
				return kerr.InvalidRequest.Code, "Null value not supported for : " + cf.Name
			}
			next[cf.Name] = *cf.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, cf.Name)
		default:
			return kerr.InvalidConfig.Code, "group configs take SET and DELETE only"
		}
	}
	if err := s.validateGroupConfigs(next); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	if validateOnly {
		return 0, ""
	}
	if err := s.cfg.ShareConfigs.SetGroupConfigs(ctx, r.ResourceName, next); err != nil {
		return kerr.RequestTimedOut.Code, err.Error()
	}
	return 0, ""
}

// validateGroupConfigs checks a group's configs: the consumer group ones by the
// group coordinator (against the broker's bounds), the others by share groups.
func (s *Server) validateGroupConfigs(next map[string]string) error {
	share := maps.Clone(next)
	if s.cfg.Groups != nil {
		maps.DeleteFunc(share, func(name, _ string) bool { return groups.IsConsumerGroupConfig(name) })
	}
	if err := s.cfg.Shares.ValidateGroupConfigs(share); err != nil {
		return err
	}
	if s.cfg.Groups != nil {
		return s.cfg.Groups.ValidateGroupConfigs(next)
	}
	return nil
}

// deleteGroupConfigs deletes the configs of the groups deleted (error code 0),
// as Kafka does. Without the state topic no group has configs, and nothing is
// created. A failed write is logged: the group is deleted all the same.
func (s *Server) deleteGroupConfigs(c *conn, deleted []kmsg.DeleteGroupsResponseGroup) {
	if s.cfg.ShareConfigs == nil {
		return
	}
	if _, ok := s.cache.Topic(sharegroup.StateTopic); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	loaded := false
	for _, g := range deleted {
		if g.ErrorCode != 0 {
			continue
		}
		if !loaded {
			if err := s.cfg.ShareConfigs.LoadGroupConfigs(ctx); err != nil {
				c.logger.Warn("deleted groups keep their configs: cannot read them", "err", err)
				return
			}
			loaded = true
		}
		if len(s.cfg.ShareConfigs.GroupConfigs(g.Group)) == 0 {
			continue
		}
		if err := s.cfg.ShareConfigs.SetGroupConfigs(ctx, g.Group, nil); err != nil {
			c.logger.Warn("a deleted group keeps its configs", "group", g.Group, "err", err)
		}
	}
}
