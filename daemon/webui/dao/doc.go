// Package dao holds the documents the web server reads and writes: YARN's
// REST shapes under /ws/v1/cluster, with the field names of Hadoop's
// ResourceManager REST API so that its clients read them unchanged, and
// Loom's own views under /ws/v1/loom.
//
// The /ws/v1/cluster documents are written in XML too, as YARN's are: the
// xml tags give each element the JSON field's name, a document with one
// field (ClusterInfoResponse, AppsResponse, ...) is that field's element,
// a list is its elements one after another, and a document of its own
// names its root with XMLRoot. A queue's type is YARN's xsi:type
// attribute.
//
// The types are plain data: the web server fills them; nothing here talks
// to the scheduler.
package dao
