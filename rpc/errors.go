package rpc

import (
	"errors"
	"fmt"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// ErrorCode is the errorDetail of a failed reply.
type ErrorCode = hadooppb.RpcResponseHeaderProto_RpcErrorCodeProto

// The error codes Loom sends.
const (
	ErrApplication       = hadooppb.RpcResponseHeaderProto_ERROR_APPLICATION
	ErrNoSuchMethod      = hadooppb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD
	ErrNoSuchProtocol    = hadooppb.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL
	ErrServer            = hadooppb.RpcResponseHeaderProto_ERROR_RPC_SERVER
	FatalUnknown         = hadooppb.RpcResponseHeaderProto_FATAL_UNKNOWN
	FatalUnsupported     = hadooppb.RpcResponseHeaderProto_FATAL_UNSUPPORTED_SERIALIZATION
	FatalInvalidHeader   = hadooppb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER
	FatalDeserializing   = hadooppb.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST
	FatalVersionMismatch = hadooppb.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH
)

// Java exception classes a Hadoop client knows how to rebuild.
const (
	ClassNoSuchMethod   = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	ClassNoSuchProtocol = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	ClassServer         = "org.apache.hadoop.ipc.RpcServerException"
	ClassIPC            = "org.apache.hadoop.ipc.IpcException"
	ClassIOException    = "java.io.IOException"
	ClassStandby        = "org.apache.hadoop.ipc.StandbyException"
	ClassRetriable      = "org.apache.hadoop.ipc.RetriableException"
)

// RemoteError is an error carried in a reply: the Java exception class
// name, its message and the IPC error code. Handlers return one to choose
// the class a Java client sees; the client returns one for every failed
// call.
type RemoteError struct {
	Class   string
	Message string
	Code    ErrorCode
	// Fatal errors close the connection.
	Fatal bool
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return e.Class
	}
	return e.Class + ": " + e.Message
}

// Errorf makes an application error of the given Java class.
func Errorf(class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: ErrApplication}
}

// IsClass says whether err is, or wraps, a RemoteError of the given class.
func IsClass(err error, class string) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Class == class
}

func fatal(code ErrorCode, class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: code, Fatal: true}
}
