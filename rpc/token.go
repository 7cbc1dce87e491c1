package rpc

import (
	"crypto/hmac"
	"crypto/sha1"
)

// TokenPassword is a token's password as Hadoop's SecretManager makes it:
// the HMAC-SHA1 of the token's identifier bytes under a master key. The
// RM signs container tokens with it, and NodeManagers check them.
func TokenPassword(key, identifier []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(identifier)
	return m.Sum(nil)
}

// TokenPasswordOK checks a password in constant time.
func TokenPasswordOK(key, identifier, password []byte) bool {
	return hmac.Equal(TokenPassword(key, identifier), password)
}
