package kafkaapi

// What DescribeClientQuotas and AlterClientQuotas share: the protocol's
// entities as the quota package's.

import (
	"fmt"

	"skiff/quota"
)

// quotaEntity reads an entity as the protocol lists it (type and name, a nil
// name for the default); the error is Kafka's message of INVALID_REQUEST.
func quotaEntity[P any](parts []P, typeName func(P) (string, *string)) (quota.Entity, error) {
	var e quota.Entity
	for _, p := range parts {
		typ, name := typeName(p)
		var slot *quota.Name
		switch typ {
		case quota.TypeUser:
			slot = &e.User
		case quota.TypeClientID:
			slot = &e.ClientID
		case quota.TypeIP:
			slot = &e.IP
		default:
			return e, fmt.Errorf("Unhandled client quota entity type: %s", typ)
		}
		if slot.Set() {
			return e, fmt.Errorf("Invalid client quota entity, duplicate entity entry %s", typ)
		}
		*slot = quota.FromPtr(name)
	}
	if why := e.Valid(); why != "" {
		return e, fmt.Errorf("%s", why)
	}
	return e, nil
}
