package pki

import (
	"crypto/ecdsa"
	"encoding/pem"
	"slices"
	"testing"
	"time"
)

// FuzzSignCSR reads a certificate request as POST /v1/join does (the body's
// csr, in PEM: ParseCSR) and signs it as the running node does (CA.Sign).
// The request body has no decoder of its own: JSON, a version, then this.
// Invariants:
//   - neither ParseCSR nor Sign panics;
//   - a request that parses has a valid signature (Sign does not refuse it for
//     that);
//   - a chain Sign returns verifies against the CA, carries the request's
//     public key, and names exactly the request's DNS names and IP addresses.
//
// The input is the request's DER, so that mutations reach the parser rather
// than the PEM armour. Seeds are requests as NewCSR makes them for a joiner:
// a DNS name and an IP address, IPv6, several names, none.
func FuzzSignCSR(f *testing.F) {
	for _, hosts := range [][]string{{"skiff-2.example", "10.0.0.2"}, {"::1"}, {"a", "b", "c", "127.0.0.1"}, nil} {
		key, err := NewKey()
		if err != nil {
			f.Fatal(err)
		}
		csr, err := NewCSR(key, hosts)
		if err != nil {
			f.Fatal(err)
		}
		block, _ := pem.Decode(csr)
		f.Add(block.Bytes)
	}
	now := time.Now()
	ca, err := NewCA(now)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		csr, err := ParseCSR(pemBlock("CERTIFICATE REQUEST", der))
		if err != nil {
			return
		}
		chain, err := ca.Sign(csr, now)
		if err != nil {
			if csr.CheckSignature() != nil {
				t.Fatalf("ParseCSR accepted a request with a bad signature")
			}
			return // not ECDSA, or no host
		}
		certs, err := ParseCertificates(chain)
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.Verify(certs, now); err != nil {
			t.Fatalf("the signed chain does not verify: %v", err)
		}
		got, want := certs[0].PublicKey.(*ecdsa.PublicKey), csr.PublicKey.(*ecdsa.PublicKey)
		if !got.Equal(want) {
			t.Fatal("the certificate carries another public key than the request")
		}
		if !slices.Equal(certs[0].DNSNames, csr.DNSNames) || len(certs[0].IPAddresses) != len(csr.IPAddresses) {
			t.Fatalf("the certificate names %v %v, the request %v %v", certs[0].DNSNames, certs[0].IPAddresses, csr.DNSNames, csr.IPAddresses)
		}
		for i, ip := range csr.IPAddresses {
			if !certs[0].IPAddresses[i].Equal(ip) {
				t.Fatalf("the certificate names %v, the request %v", certs[0].IPAddresses, csr.IPAddresses)
			}
		}
	})
}
