// Package deploycheck holds the checks that keep BoxOffice's deployment files (deploy/,
// docker-compose.yml, the Dockerfile) honest, and the tests that run them on the real files
// and on broken fixtures (testdata/).
//
// What to expect is read from the code, not listed by hand: LoadWorkspace finds the
// deployables in go.work and the environment variables each reads (go/ast over its source).
// CheckCompose holds docker-compose.yml, loaded by the compose-spec loader, to them;
// CheckManifests does the same for a kustomize build of deploy/k8s, and CheckNetworkPolicies
// holds its NetworkPolicies to the connections its components make; CheckDockerfile and
// BuildLine.Command check and run the Dockerfile's build. KubernetesPolicy generates the
// gateway's policy for Kubernetes from its default one.
package deploycheck
