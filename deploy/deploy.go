// Package deploy holds the tests that keep BoxOffice's deployment files honest: the compose
// file loads through the compose-spec loader and names every deployable with a healthcheck,
// the Kubernetes manifests build with kustomize and every Deployment has probes and resources,
// and the Dockerfile builds each binary the way the tests do.
package deploy
