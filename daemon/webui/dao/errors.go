package dao

// RemoteExceptionResponse is every error's body, as YARN writes it.
type RemoteExceptionResponse struct {
	RemoteException RemoteException `json:"RemoteException" xml:"RemoteException"`
}

// RemoteException names the Java exception a YARN client rebuilds.
type RemoteException struct {
	Exception     string `json:"exception" xml:"exception"` // the class's simple name
	Message       string `json:"message" xml:"message"`
	JavaClassName string `json:"javaClassName" xml:"javaClassName"`
}
