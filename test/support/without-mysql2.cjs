// @ts-nocheck -- patches a private hook of Node.js
// Preloaded with `node --require`: makes `mysql2` impossible to resolve, as in an application that never installed it.
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (/^mysql2?(\/|$)|[\\/]node_modules[\\/]mysql2?([\\/]|$)/.test(request)) {
    const error = new Error(`Cannot find module '${request}'`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
