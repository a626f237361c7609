;;; eglot_refactor.el --- Emacs eglot with no ollie package: `Ollie: Refactor...' runs a turn, its edit lands.  -*- lexical-binding: t -*-
;; Run by tests/editors/test_eglot.py: emacs --batch -l this-file, in the workspace.
(load (expand-file-name "eglot_setup.el" (file-name-directory load-file-name)))
(setq jsonrpc-default-request-timeout 60)
(condition-case err
    (progn
      (let ((server (ollie-test-connect)))
        (let* ((actions (eglot-code-actions (point-min) (point-max) "refactor"))
               (titles (mapcar (lambda (a) (plist-get a :title)) actions))
               (refactor (seq-find (lambda (a) (equal (plist-get a :title) "Ollie: Refactor...")) actions))
               (command (plist-get refactor :command)))
          (eglot-execute-command server (plist-get command :command) (plist-get command :arguments))
          (ollie-test-finish `((titles . ,(vconcat titles))
                               (buffer . ,(buffer-substring-no-properties (point-min) (point-max)))
                               (modified . ,(if (buffer-modified-p) t :json-false)))))))
  (error (ollie-test-finish `((failure . ,(format "%S" err))))))
