package nm

// YARN's ContainerExitStatus values: what a completed container reports
// when the framework, not the process, decided its end. A process that
// exits by itself reports its own exit code (128+N when signal N killed
// it, as a shell reports it).
const (
	ExitSuccess = 0
	// ExitInvalid is also what a container reports when it failed before
	// its process ran (localisation, launch), as YARN does.
	ExitInvalid                    = -1000
	ExitAborted                    = -100
	ExitDisksFailed                = -101
	ExitPreempted                  = -102
	ExitKilledExceededVmem         = -103
	ExitKilledExceededPmem         = -104
	ExitKilledByAppMaster          = -105
	ExitKilledByResourceManager    = -106
	ExitKilledAfterAppCompletion   = -107
	ExitKilledByContainerScheduler = -108
)

// Diagnostics YARN's NodeManager gives each kind of kill.
const (
	diagKilledByAppMaster  = "Container killed by the ApplicationMaster."
	diagKilledByRM         = "Container Killed by ResourceManager"
	diagAppFinishedByRM    = "Container killed on application-finish event: Application killed by ResourceManager"
	diagAppFinishedOnNMEnd = "Container killed on application-finish event: Application killed on shutdown"
)
