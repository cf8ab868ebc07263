package chain

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/internal/jcs"
)

// ErrBadSignature is a signed head whose signature does not verify with
// the public key given.
var ErrBadSignature = errors.New("the head's signature does not verify with this public key")

// Head is the chain's last link at a moment: its place and hash.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
	At   int64  `json:"at"` // when it was signed, in milliseconds
}

// SignedHead is a head with its Ed25519 signature (a checkpoint).
type SignedHead struct {
	Head
	// Key names the public key (KeyID); Signature is base64.
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// message is what a signature covers: the head's canonical JSON, with a
// name that keeps it from being any other message of the key.
func (h Head) message() []byte {
	b, _ := jcs.Marshal(struct {
		Chain string `json:"chain"`
		Head
	}{"agentctl audit chain v1", h})
	return b
}

// Sign signs h with key.
func Sign(key ed25519.PrivateKey, h Head) SignedHead {
	return SignedHead{Head: h, Key: KeyID(key.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, h.message()))}
}

// Verify checks s's signature with pub.
func (s SignedHead) Verify(pub ed25519.PublicKey) error {
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || !ed25519.Verify(pub, s.Head.message(), sig) {
		return fmt.Errorf("%w (key %s, signed by %s)", ErrBadSignature, KeyID(pub), s.Key)
	}
	return nil
}

// KeyID names a public key: the first 16 hex digits of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// GenerateKey makes a key pair, as PEM: the private key in PKCS #8, the
// public in PKIX (as openssl writes Ed25519 keys).
func GenerateKey() (private, public []byte, err error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	p, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: p}), nil
}

// ParsePrivateKey reads an Ed25519 private key in PEM (PKCS #8). Its
// errors never quote the key.
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM private key (-----BEGIN PRIVATE KEY-----); make one with agentctl audit keygen")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, errors.New("not a PKCS #8 private key")
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not Ed25519", k)
	}
	return key, nil
}

// ParsePublicKey reads an Ed25519 public key in PEM (PKIX).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM public key (-----BEGIN PUBLIC KEY-----)")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKIX public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not Ed25519", k)
	}
	return pub, nil
}
