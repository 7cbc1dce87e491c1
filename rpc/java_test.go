package rpc

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Hadoop's TOKEN auth is the JDK's DIGEST-MD5 (javax.security.sasl), which
// SaslRpcClient and SaslRpcServer drive. There is no Hadoop here, but
// there is a JDK: these tests run Loom's DIGEST-MD5 against the JDK's,
// configured as Hadoop configures it, in both directions.

// javaPeer compiles testdata/java/DigestPeer.java once per test and
// starts it in the given role.
func javaPeer(t *testing.T, role, user, password string) (send func([]byte), recv func() []byte, done func() string) {
	t.Helper()
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("no JDK (javac): .ci/run installs openjdk-17-jdk-headless")
	}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "java", "DigestPeer.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command("java", "-cp", dir, "DigestPeer", role, user, password)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return strings.TrimSpace(l)
	}
	send = func(b []byte) {
		s := "-"
		if len(b) > 0 {
			s = base64.StdEncoding.EncodeToString(b)
		}
		fmt.Fprintln(in, s)
	}
	recv = func() []byte {
		l := line()
		if l == "-" {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil {
			t.Fatalf("the JDK peer said %q (%v); stderr: %s", l, err, stderr.String())
		}
		return b
	}
	done = func() string {
		l := line()
		in.Close()
		cmd.Wait()
		return l + stderr.String()
	}
	return send, recv, done
}

// A Java client holding a token authenticates to Loom's server, and
// checks Loom's rspauth.
func TestJavaClientLoomServer(t *testing.T) {
	id, pw := []byte("\x0a\x08appattempt"), []byte("the token's password")
	for _, tc := range []struct {
		name     string
		clientPw []byte
		want     string
	}{
		{"right password", pw, ""},
		{"wrong password", []byte("guessed"), "Mismatched response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			send, recv, done := javaPeer(t, "client", base64.StdEncoding.EncodeToString(id), base64.StdEncoding.EncodeToString(tc.clientPw))
			s := newDigestServer()
			send(s.challenge())
			resp := recv()
			gotID, rspauth, err := s.verify(resp, func(got []byte) ([]byte, error) {
				if string(got) != string(id) {
					return nil, fmt.Errorf("unknown identifier %q", got)
				}
				return pw, nil
			})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("verify of %q: %v, want %q", resp, err, tc.want)
				}
				return
			}
			if err != nil || string(gotID) != string(id) {
				t.Fatalf("verify of the JDK's response %q: %q %v", resp, gotID, err)
			}
			send(rspauth)
			if got := done(); got != "complete" {
				t.Fatalf("the JDK client after Loom's rspauth: %s", got)
			}
		})
	}
}

// Loom's client authenticates to a JDK server, and the JDK's rspauth
// passes Loom's check.
func TestLoomClientJavaServer(t *testing.T) {
	id, pw := []byte("ident"), []byte("secret")
	user := base64.StdEncoding.EncodeToString(id)
	send, recv, done := javaPeer(t, "server", user, base64.StdEncoding.EncodeToString(pw))
	resp, check, err := digestClient(recv(), id, pw)
	if err != nil {
		t.Fatal(err)
	}
	send(resp)
	if err := check(recv()); err != nil {
		t.Fatal(err)
	}
	if got := done(); got != "complete "+user {
		t.Fatalf("the JDK server: %s", got)
	}
}
