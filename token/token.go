// Package token makes and checks the bearer tokens of agentctl's API.
//
// A token is "agt_" followed by 43 characters of URL-safe base64: 256
// random bits. Only its SHA-256 hash is stored; the public id of a token
// is the first 12 hex digits of that hash.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// Prefix starts every token, so that secret scanners recognise one.
const Prefix = "agt_"

// secretLen is the length of a token after Prefix.
var secretLen = base64.RawURLEncoding.EncodedLen(32)

// ErrMalformed: the text is not a token agentctl made.
var ErrMalformed = errors.New("malformed token")

// New returns a new random token and its hash.
func New() (secret string, hash [32]byte) {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	secret = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, Hash(secret)
}

// Hash returns the SHA-256 hash of a token, as the store keeps it.
func Hash(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// ID returns the public id of the token with this hash.
func ID(hash [32]byte) string { return hex.EncodeToString(hash[:6]) }

// Parse checks the form of a token as a client sent it and returns its
// hash; it does not say whether the store knows it.
func Parse(secret string) ([32]byte, error) {
	if !strings.HasPrefix(secret, Prefix) || len(secret) != len(Prefix)+secretLen {
		return [32]byte{}, ErrMalformed
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret[len(Prefix):]); err != nil {
		return [32]byte{}, ErrMalformed
	}
	return Hash(secret), nil
}

// Equal compares two hashes in constant time.
func Equal(a, b [32]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }
