// Package dao holds the documents the web server reads and writes: YARN's
// REST shapes under /ws/v1/cluster, with the field names of Hadoop's
// ResourceManager REST API so that its clients read them unchanged, and
// Loom's own views under /ws/v1/loom.
//
// The types are plain data: the web server fills them; nothing here talks
// to the scheduler.
package dao
