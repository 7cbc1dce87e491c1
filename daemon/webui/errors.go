package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
)

// webError is an answer other than success: a status and the exception a
// YARN client rebuilds from the RemoteException body.
type webError struct {
	status  int
	class   string // the Java class, as javaClassName
	message string
	// allow is the Allow header of a 405.
	allow string
}

func (e *webError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.class, e.message) }

// The exception classes of YARN's web services and of JAX-RS.
const (
	classBadRequest    = "org.apache.hadoop.yarn.webapp.BadRequestException"
	classNotFound      = "org.apache.hadoop.yarn.webapp.NotFoundException"
	classForbidden     = "org.apache.hadoop.yarn.webapp.ForbiddenException"
	classNotAllowed    = "javax.ws.rs.NotAllowedException"
	classNotSupported  = "javax.ws.rs.NotSupportedException"
	classWebAppFailure = "javax.ws.rs.WebApplicationException"
)

func badRequest(format string, args ...any) *webError {
	return &webError{status: http.StatusBadRequest, class: classBadRequest, message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *webError {
	return &webError{status: http.StatusNotFound, class: classNotFound, message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *webError {
	return &webError{status: http.StatusForbidden, class: classForbidden, message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) *webError {
	return &webError{status: http.StatusInternalServerError, class: classWebAppFailure, message: fmt.Sprintf(format, args...)}
}

// simpleName is a Java class's name without its package, as YARN's
// "exception" field gives it.
func simpleName(class string) string {
	return class[strings.LastIndexByte(class, '.')+1:]
}

// fromBackend maps an error of the Backend to an answer. Remote errors
// keep their Java class where it has a meaning on the web: a missing app
// is a 404, a refused caller a 403; other classes are the server's fault.
func fromBackend(err error) *webError {
	var we *webError
	if errors.As(err, &we) {
		return we
	}
	var re *rpc.RemoteError
	if errors.As(err, &re) {
		switch re.Class {
		case rpc.ClassApplicationNotFound, rpc.ClassApplicationAttemptNotFound, rpc.ClassContainerNotFound:
			return notFound("%s", re.Message)
		case rpc.ClassAccessControl:
			return forbidden("%s", re.Message)
		case rpc.ClassApplicationIDNotProvided, rpc.ClassInvalidResourceRequest:
			return badRequest("%s", re.Message)
		}
		return &webError{status: http.StatusInternalServerError, class: re.Class, message: re.Message}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &webError{status: http.StatusServiceUnavailable, class: classWebAppFailure, message: err.Error()}
	}
	return internalError("%v", err)
}

// writeError answers with YARN's RemoteException body: in XML under
// /ws/v1/cluster when the client asks for XML, in JSON otherwise.
func writeError(w http.ResponseWriter, r *http.Request, e *webError) {
	doc := dao.RemoteExceptionResponse{RemoteException: dao.RemoteException{
		Exception: simpleName(e.class), Message: e.message, JavaClassName: e.class}}
	body, _ := marshal(doc)
	contentType := contentTypeJSON
	if isClusterPath(r.URL.Path) && wantsXML(r) {
		if b, err := marshalXML(doc); err == nil {
			body, contentType = b, contentTypeXML
		}
	}
	h := w.Header()
	if isClusterPath(r.URL.Path) && h.Get("Vary") == "" {
		h.Add("Vary", "Accept")
	}
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if e.allow != "" {
		h.Set("Allow", e.allow)
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}
