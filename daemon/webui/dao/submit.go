package dao

import "encoding/json"

// AppSubmission is the body of POST /ws/v1/cluster/apps: YARN's
// ApplicationSubmissionContextInfo with its hyphenated names. Pointers
// tell a field left out from one set to its zero value.
//
// YARN's JSON writes a one-element list as the element itself
// ({"command": "run"} as well as {"command": ["run"]}), so the lists are
// kept raw here and read by the server, which can then name the element
// that is wrong.
type AppSubmission struct {
	ApplicationID   *string                 `json:"application-id"`
	ApplicationName *string                 `json:"application-name"`
	Queue           *string                 `json:"queue"`
	Priority        *int32                  `json:"priority"`
	AMContainerSpec *ContainerLaunchContext `json:"am-container-spec"`
	UnmanagedAM     *bool                   `json:"unmanaged-AM"`
	CancelTokens    *bool                   `json:"cancel-tokens-when-complete"`
	MaxAppAttempts  *int32                  `json:"max-app-attempts"`
	Resource        *Resource               `json:"resource"`
	ApplicationType *string                 `json:"application-type"`
	// KeepContainers is keep-containers-across-application-attempts.
	KeepContainers *bool `json:"keep-containers-across-application-attempts"`
	// ApplicationTags is {"tag": [...]} as YARN writes it; a bare list
	// or a single string is read too.
	ApplicationTags json.RawMessage `json:"application-tags"`
	// AttemptFailuresValidityInterval is in ms; -1 counts every failure.
	AttemptFailuresValidityInterval *int64  `json:"attempt-failures-validity-interval"`
	AppNodeLabelExpression          *string `json:"app-node-label-expression"`
	// ReservationID submits the app to a reservation.
	ReservationID *string `json:"reservation-id"`
}

// ContainerLaunchContext is YARN's am-container-spec.
type ContainerLaunchContext struct {
	LocalResources *Entries `json:"local-resources"` // of LocalResourceEntry
	Environment    *Entries `json:"environment"`     // of KeyValue
	Commands       *struct {
		Command json.RawMessage `json:"command"` // a string or a list
	} `json:"commands"`
	// ServiceData values are base64, as YARN's are.
	ServiceData     *Entries `json:"service-data"`     // of KeyValue
	ApplicationACLs *Entries `json:"application-acls"` // of KeyValue: VIEW_APP, MODIFY_APP
}

// Entries is YARN's map shape, {"entry": [...]}: one entry or a list.
type Entries struct {
	Entry json.RawMessage `json:"entry"`
}

// LocalResourceEntry names one file the container needs.
type LocalResourceEntry struct {
	Key   *string        `json:"key"`
	Value *LocalResource `json:"value"`
}

// LocalResource is where a file comes from and how it is shared.
type LocalResource struct {
	Resource   *string `json:"resource"`   // a URL
	Type       *string `json:"type"`       // ARCHIVE, FILE or PATTERN
	Visibility *string `json:"visibility"` // PUBLIC, PRIVATE or APPLICATION
	Size       *int64  `json:"size"`
	Timestamp  *int64  `json:"timestamp"`
	Pattern    *string `json:"pattern"`
}

// KeyValue is one entry of the environment, service data or ACLs.
type KeyValue struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}
