;;; eglot_setup.el --- What the eglot scenarios share: eglot set up as a user does, code.py open, a result file.  -*- lexical-binding: t -*-
;; Loaded by eglot_action.el and eglot_refactor.el (tests/editors/test_eglot.py runs them: emacs --batch -l FILE).
(require 'eglot)
(require 'json)
(setq eglot-confirm-server-initiated-edits nil
      ;; Wait for the daemon's initialize answer (eglot's default gives up after 3 s and goes on in the background,
      ;; so a loaded machine's slower start failed the test).
      eglot-sync-connect t
      eglot-connect-timeout 120
      eglot-server-programs
      `((python-mode . ,(append (json-read-from-string (getenv "OLLIE_TEST_SERVER_CMD"))
                                ;; README's `:initializationOptions', as a plist (OLLIE_TEST_INIT: its JSON).
                                (when (getenv "OLLIE_TEST_INIT")
                                  (list :initializationOptions
                                        (let ((json-object-type 'plist)) (json-read-from-string (getenv "OLLIE_TEST_INIT")))))))))

(defun ollie-test-finish (result)
  "Write RESULT as JSON for the pytest side, then quit."
  (with-temp-file (getenv "OLLIE_TEST_OUT") (insert (json-encode result)))
  (kill-emacs 0))

(defun ollie-test-connect ()
  "Open code.py in python-mode and connect eglot to ollie-lsp; the server."
  (find-file "code.py")
  (python-mode)
  (call-interactively #'eglot)
  (or (eglot-current-server) (error "eglot did not connect")))
