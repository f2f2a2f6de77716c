// ESLint for the Studio's own JavaScript (not vendor/): `make lint` and .ci/run run it.
// The rule that matters most here is the function length: every function fits on a screen.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["handlers/studio/static/vendor/**", "node_modules/**", ".venv*/**"] },
  js.configs.recommended,
  {
    files: ["handlers/studio/static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: { ...globals.browser },
    },
    rules: {
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: false, skipComments: false, IIFEs: true }],
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      eqeqeq: ["error", "smart"],
      "no-var": "error",
      "prefer-const": "error",
      // Data never becomes HTML (docs/studio.md, Security): the DOM is built with js/dom.js.
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "build nodes with js/dom.js" },
        { property: "outerHTML", message: "build nodes with js/dom.js" },
        { property: "insertAdjacentHTML", message: "build nodes with js/dom.js" }],
    },
  },
  {
    files: ["handlers/studio/static/swagger-init.js"],
    languageOptions: { sourceType: "script", globals: { ...globals.browser, SwaggerUIBundle: "readonly" } },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "module", globals: { ...globals.node } },
  },
];
