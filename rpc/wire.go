// Package rpc speaks Hadoop IPC version 9, the wire protocol of YARN: a
// server that serves registered protocols to unmodified YARN clients and
// AMs, and a pipelining, pooled client for Loom's own daemons and tools.
//
// A connection opens with a 7-byte preamble ("hrpc", version 9, service
// class, auth protocol). After optional SASL negotiation (call -33) the
// client sends its connection context (call -3), then calls. Every packet
// is a 4-byte big-endian length followed by varint-delimited protocol
// buffers: an RpcRequestHeaderProto, then for protocol-buffer calls a
// RequestHeaderProto naming the method and protocol, then the request.
// Replies are an RpcResponseHeaderProto and, on success, the response.
package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Wire constants of Hadoop IPC version 9.
const (
	// Version is the IPC version Loom speaks, the one in every Hadoop
	// since 2.0.
	Version = 9
	// AuthNone is the preamble's auth protocol for SIMPLE auth without
	// SASL; AuthSASL is the one Java clients send when they will
	// negotiate.
	AuthNone = 0
	AuthSASL = 0xDF // -33 as a byte

	// Call ids below zero are the connection's own.
	ConnectionContextCallID = -3
	PingCallID              = -4
	SASLCallID              = -33

	// DefaultMaxFrame is ipc.maximum.data.length's default, 64 MB.
	DefaultMaxFrame = 64 << 20

	// ProtocolVersion is clientProtocolVersion in every YARN call.
	ProtocolVersion = 1
)

var preambleMagic = [4]byte{'h', 'r', 'p', 'c'}

// Preamble is what a client sends first on a connection.
type Preamble struct {
	Version      byte
	ServiceClass byte
	AuthProtocol byte
}

// ParsePreamble checks the 7-byte connection preamble.
func ParsePreamble(b []byte) (Preamble, error) {
	if len(b) != 7 {
		return Preamble{}, fmt.Errorf("connection preamble is %d bytes, want 7", len(b))
	}
	if [4]byte(b[:4]) != preambleMagic {
		return Preamble{}, fmt.Errorf("connection preamble starts %q, want \"hrpc\": not a Hadoop IPC client", b[:4])
	}
	p := Preamble{Version: b[4], ServiceClass: b[5], AuthProtocol: b[6]}
	if p.Version != Version {
		return p, fmt.Errorf("IPC version %d, this server speaks version %d", p.Version, Version)
	}
	if p.AuthProtocol != AuthNone && p.AuthProtocol != AuthSASL {
		return p, fmt.Errorf("auth protocol %d, want 0 (none) or -33 (SASL)", int8(p.AuthProtocol))
	}
	return p, nil
}

// AppendPreamble appends a client's preamble.
func AppendPreamble(b []byte, p Preamble) []byte {
	b = append(b, preambleMagic[:]...)
	return append(b, p.Version, p.ServiceClass, p.AuthProtocol)
}

// FrameTooLargeError is a frame whose length is over the limit.
type FrameTooLargeError struct{ Length, Max int64 }

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes is over the %d-byte limit (ipc.maximum.data.length)", e.Length, e.Max)
}

// ReadFrameLength reads a frame's 4-byte length and checks it against max.
func ReadFrameLength(r io.Reader, max int) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	return frameLength(hdr, max)
}

func frameLength(hdr [4]byte, max int) (int, error) {
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return 0, &FrameTooLargeError{Length: int64(n), Max: int64(max)}
	}
	return int(n), nil
}

// ReadFrame reads one length-prefixed frame into buf (grown as needed).
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	n, err := ReadFrameLength(r, max)
	if err != nil {
		return buf, err
	}
	return readBody(r, n, buf)
}

// readBody reads an n-byte frame body. Large bodies grow the buffer as
// the bytes arrive, so a peer that only claims a 64 MB frame costs nothing.
func readBody(r io.Reader, n int, buf []byte) ([]byte, error) {
	const step = 1 << 20
	if cap(buf) < min(n, step) {
		buf = make([]byte, 0, min(n, step))
	}
	buf = buf[:0]
	for len(buf) < n {
		want := min(n-len(buf), step)
		if cap(buf)-len(buf) < want {
			buf = append(buf, make([]byte, want)...)[:len(buf)]
		}
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// marshal sizes messages; sized marshals a message right after marshal
// sized it, reusing the sizes that pass cached in it (and its nested
// messages) instead of computing them again.
var (
	marshal = proto.MarshalOptions{}
	sized   = proto.MarshalOptions{UseCachedSize: true}
)

// AppendFrame appends a frame made of the given messages, each
// varint-delimited, after a 4-byte length.
func AppendFrame(b []byte, msgs ...proto.Message) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	for _, m := range msgs {
		var err error
		if b, err = appendDelimited(b, m); err != nil {
			return b[:start], err
		}
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

func appendDelimited(b []byte, m proto.Message) ([]byte, error) {
	return appendSized(b, m, marshal.Size(m))
}

// appendSized is appendDelimited for a message that marshal.Size has just
// sized as size.
func appendSized(b []byte, m proto.Message, size int) ([]byte, error) {
	b = protowire.AppendVarint(b, uint64(size))
	start := len(b)
	b, err := sized.MarshalAppend(b, m)
	if err == nil && len(b)-start != size {
		// Changed since it was sized: a caller's bug, never sent.
		return b[:start], fmt.Errorf("%s changed while it was encoded (%d bytes, sized %d)", m.ProtoReflect().Descriptor().FullName(), len(b)-start, size)
	}
	return b, err
}

// errTruncated is a delimited message whose length runs past its frame.
var errTruncated = errors.New("delimited message runs past the end of its frame")

// nextDelimited splits the next varint-delimited message off b.
func nextDelimited(b []byte) (msg, rest []byte, err error) {
	n, w := protowire.ConsumeVarint(b)
	if w < 0 {
		return nil, nil, fmt.Errorf("bad length varint: %w", protowire.ParseError(w))
	}
	if n > uint64(len(b)-w) {
		return nil, nil, errTruncated
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

// unmarshalDelimited decodes the next delimited message of b into m and
// returns the rest.
func unmarshalDelimited(b []byte, m proto.Message) ([]byte, error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(msg, m); err != nil {
		return nil, err
	}
	return rest, nil
}
