// Types of the parts of dagre (vendored as dagre.esm.js) that js/canvas.js uses, so
// `tsc --checkJs` checks our calls without type-checking the minified library itself.
export namespace graphlib {
  class Graph {
    constructor(options?: { directed?: boolean; multigraph?: boolean; compound?: boolean });
    setGraph(label: Record<string, unknown>): Graph;
    setDefaultEdgeLabel(fn: () => Record<string, unknown>): Graph;
    setNode(id: string, label: { width: number; height: number }): Graph;
    setEdge(from: string, to: string): Graph;
    nodes(): string[];
    node(id: string): { x: number; y: number; width: number; height: number };
  }
}
export function layout(graph: graphlib.Graph): void;
