package rpc

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// The per-call headers are parsed and written by hand: they are on every
// call's path, have a handful of scalar fields, and the generic protobuf
// path costs an allocation per field. FuzzHeaders checks these against the
// generated code.

// requestHeader is the part of RpcRequestHeaderProto the server uses.
type requestHeader struct {
	kind      int32 // RpcKindProto; -1 when absent
	op        int32 // OperationProto
	callID    int32
	hasCallID bool
	clientID  []byte // aliases the frame
	retry     int32
	hasRetry  bool
}

// parseRequestHeader reads an RpcRequestHeaderProto.
func parseRequestHeader(b []byte) (requestHeader, error) {
	h := requestHeader{kind: -1}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return h, protowire.ParseError(n)
		}
		b = b[n:]
		// A known field with another wire type is an unknown field, as
		// the generated code treats it.
		switch {
		case (num >= 1 && num <= 3 || num == 5) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return h, protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case 1:
				h.kind = int32(v)
			case 2:
				h.op = int32(v)
			case 3:
				h.callID, h.hasCallID = int32(protowire.DecodeZigZag(v&0xffffffff)), true
			case 5:
				h.retry, h.hasRetry = int32(protowire.DecodeZigZag(v&0xffffffff)), true
			}
		case num == 4 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return h, protowire.ParseError(n)
			}
			h.clientID, b = v, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return h, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	if !h.hasCallID {
		return h, errors.New("RpcRequestHeaderProto has no callId")
	}
	return h, nil
}

// appendRequestHeader writes a protocol-buffer call's RpcRequestHeaderProto
// as a Java client does: kind, final packet, call id, client id, retry -1.
func appendRequestHeader(b []byte, callID int32, clientID []byte) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 2) // RPC_PROTOCOL_BUFFER
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 0) // RPC_FINAL_PACKET
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(callID)))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, clientID)
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(-1))
}

// parseMethodHeader reads a RequestHeaderProto's method and protocol; both
// alias b.
func parseMethodHeader(b []byte) (method, protocol []byte, err error) {
	var haveM, haveP, haveV bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil, protowire.ParseError(n)
			}
			if num == 1 {
				method, haveM = v, true
			} else {
				protocol, haveP = v, true
			}
			b = b[n:]
			continue
		}
		haveV = haveV || num == 3 && typ == protowire.VarintType
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		b = b[n:]
	}
	if !haveM || !haveP || !haveV {
		return nil, nil, errors.New("methodName, declaringClassProtocolName or clientProtocolVersion missing")
	}
	return method, protocol, nil
}

// appendMethodHeader writes a RequestHeaderProto.
func appendMethodHeader(b []byte, method, protocol string) []byte {
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, method)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, protocol)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	return protowire.AppendVarint(b, ProtocolVersion)
}

// appendSuccessHeader writes the RpcResponseHeaderProto of a successful
// call: the call id, SUCCESS, the server's IPC version, and the request's
// client id and retry count when it sent them.
func appendSuccessHeader(b []byte, callID int32, clientID []byte, retry int32, hasRetry bool) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(wireCallID(callID)))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 0) // SUCCESS
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, Version)
	if len(clientID) > 0 {
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		b = protowire.AppendBytes(b, clientID)
	}
	if hasRetry {
		b = protowire.AppendTag(b, 8, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(retry)))
	}
	return b
}

// appendDelimitedBytes writes b as a varint-delimited message built by
// fill, which appends the message body.
func appendDelimitedWith(b []byte, fill func([]byte) []byte) []byte {
	// Reserve one length byte, the common case; move the body if the
	// length needs more.
	start := len(b)
	b = append(b, 0)
	b = fill(b)
	n := len(b) - start - 1
	if n < 0x80 {
		b[start] = byte(n)
		return b
	}
	w := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, w-1)...)
	copy(b[start+w:], b[start+1:start+1+n])
	protowire.AppendVarint(b[:start], uint64(n))
	return b
}

// parseResponseStatus reads an RpcResponseHeaderProto's call id and
// status, all a successful reply needs.
func parseResponseStatus(b []byte) (callID int32, status int32, err error) {
	var haveID, haveStatus bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, protowire.ParseError(n)
			}
			b = b[n:]
			if num == 1 {
				callID, haveID = int32(uint32(v)), true
			} else {
				status, haveStatus = int32(v), true
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
	}
	if !haveID || !haveStatus {
		return 0, 0, errors.New("RpcResponseHeaderProto has no callId or status")
	}
	return callID, status, nil
}
