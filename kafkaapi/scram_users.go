package kafkaapi

// What DescribeUserScramCredentials and AlterUserScramCredentials share: the
// protocol's numbers of the SCRAM mechanisms.

import "skiff/auth"

// scramMechanismNumbers are the SCRAM mechanisms as the protocol numbers them
// (Kafka's ScramMechanism type): 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
var scramMechanismNumbers = map[int8]string{1: auth.ScramSHA256, 2: auth.ScramSHA512}

func scramMechanismNumber(name string) int8 {
	for n, m := range scramMechanismNumbers {
		if m == name {
			return n
		}
	}
	return 0
}
